//===- Sources.cpp - File datasets: one stage per file, interleaved -----===//
//
// A file dataset is a Dataset of file names interleaved over a one-file
// stage (RecordFileDataset), which wraps a reader with read(std::string &),
// offset() and seek(offset): its position is the offset of the next record.
// make_csv_dataset reading one file at a time fuses its row stages into one
// (CsvBatchDataset).
//
//===----------------------------------------------------------------------===//

#include "lib/Data/DatasetInternal.h"
#include "lib/Data/InputStream.h"
#include "lib/Data/Readers.h"
#include "lib/Data/TFRecord.h"
#include "lib/Data/TextLine.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

namespace estc {
namespace data {

using detail::DatasetImpl;
using detail::IteratorImpl;

namespace {

template <typename Reader, typename = void>
struct HasLineNumber : std::false_type {};
template <typename Reader>
struct HasLineNumber<
    Reader, std::void_t<decltype(std::declval<Reader>().line_number())>>
    : std::true_type {};

/// The records of one file, read with Reader (TFRecordReader,
/// TextLineReader): its position is offset() (and line_number(), when the
/// reader counts lines).
template <typename Reader> class RecordFileDataset : public DatasetImpl {
public:
  RecordFileDataset(std::string kind, std::string path, Compression compression,
                    size_t bufferSize)
      : kind_(std::move(kind)), path_(std::move(path)),
        compression_(compression), bufferSize_(bufferSize) {}

  std::string describe() const override {
    return kind_ + "(" + path_ + "," + compression_name(compression_) + ")";
  }

  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const RecordFileDataset &d)
          : IteratorImpl(p), d_(d) {}
      std::optional<Element> next() override {
        if (done_)
          return std::nullopt;
        open();
        std::string record;
        uint64_t before = reader_->offset();
        bool got;
        try {
          got = reader_->read(record);
        } catch (const DataError &) {
          // A reader that cannot move past the fault ends the file here.
          if (reader_->offset() == before)
            done_ = true;
          throw;
        }
        if (!got) {
          done_ = true;
          reader_.reset();
          return std::nullopt;
        }
        return Element(TensorValue::of_strings({}, {std::move(record)}));
      }
      void save(IteratorState &s) override {
        s.put_int(key("done"), done_);
        s.put_int(key("offset"),
                  reader_ ? static_cast<int64_t>(reader_->offset()) : 0);
        if constexpr (HasLineNumber<Reader>::value)
          s.put_int(key("line"), reader_ ? reader_->line_number() : 0);
      }
      void restore(const IteratorState &s) override {
        done_ = s.get_int(key("done")) != 0;
        reader_.reset();
        if (!done_) {
          open();
          int64_t offset = s.get_int(key("offset"));
          if (offset < 0)
            throw DataError("input pipeline state: negative offset in " +
                            d_.path_);
          if constexpr (HasLineNumber<Reader>::value)
            reader_->seek(static_cast<uint64_t>(offset),
                          s.get_int(key("line")));
          else
            reader_->seek(static_cast<uint64_t>(offset));
        }
      }

    private:
      void open() {
        if (!reader_)
          reader_ = std::make_unique<Reader>(d_.path_, d_.compression_,
                                             d_.bufferSize_);
      }
      const RecordFileDataset &d_;
      std::unique_ptr<Reader> reader_;
      bool done_ = false;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::string kind_;
  std::string path_;
  Compression compression_;
  size_t bufferSize_;
};

const std::string &fileName(const Element &e, const char *who) {
  if (!e.is_leaf() || std::holds_alternative<SparseTensor>(e.leaf()) ||
      tensor(e).dtype != DType::String || tensor(e).num_elements() != 1)
    throw std::invalid_argument(std::string(who) +
                                ": file names must be string scalars, not " +
                                to_string(spec_of(e)));
  return tensor(e).strings[0];
}

Dataset namesDataset(std::vector<std::string> filenames, const char *who) {
  if (filenames.empty())
    throw std::invalid_argument(std::string(who) + ": no file names");
  auto n = static_cast<int64_t>(filenames.size());
  return Dataset::from_tensor_slices(
      Element(TensorValue::of_strings({n}, std::move(filenames))));
}

size_t checkBuffer(int64_t bufferSize, const char *who) {
  if (bufferSize <= 0)
    throw std::invalid_argument(std::string(who) +
                                ": buffer_size must be positive, not " +
                                std::to_string(bufferSize));
  return static_cast<size_t>(bufferSize);
}

/// `one` over every file name: flat_map (numParallelReads 0), or
/// numParallelReads files interleaved record by record with read-ahead
/// threads (AUTOTUNE: one per core).
Dataset readFiles(const Dataset &filenames, Dataset::DatasetFn one,
                  int64_t numParallelReads) {
  if (numParallelReads == 0)
    return filenames.flat_map(std::move(one));
  int64_t cycle =
      numParallelReads == AUTOTUNE ? autotune_threads() : numParallelReads;
  return filenames.interleave(std::move(one), cycle, 1, cycle);
}

/// A file dataset read with Reader (TFRecordDataset, TextLineDataset):
/// the arguments checked, then readFiles.
template <typename Reader>
Dataset recordFiles(const Dataset &filenames, const char *kind,
                    const std::string &compressionType, int64_t bufferSize,
                    int64_t numParallelReads) {
  std::string k = kind;
  if (numParallelReads < 0 && numParallelReads != AUTOTUNE)
    throw std::invalid_argument(k + ": num_parallel_reads must be 0, "
                                    "positive or AUTOTUNE");
  Compression compression = parse_compression(compressionType);
  size_t buffer = checkBuffer(bufferSize, kind);
  return readFiles(
      filenames,
      [k, compression, buffer](const Element &name) {
        return Dataset::from_impl(std::make_shared<RecordFileDataset<Reader>>(
            k, fileName(name, k.c_str()), compression, buffer));
      },
      numParallelReads);
}

/// The records of one CSV file as tuples of scalars.
class CsvFileDataset : public DatasetImpl {
public:
  CsvFileDataset(std::string path, std::vector<ColumnDefault> defaults,
                 CsvOptions options, Compression compression, size_t bufferSize)
      : path_(std::move(path)), defaults_(std::move(defaults)),
        options_(std::move(options)), compression_(compression),
        bufferSize_(bufferSize) {}

  std::string describe() const override {
    std::string s = "Csv(" + path_ + "," + compression_name(compression_) + ",";
    for (const ColumnDefault &d : defaults_)
      s += std::string(dtype_name(d.dtype)) + (d.value ? "=" : "!") + ";";
    return s + (options_.header ? "header" : "") + ")";
  }

  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const CsvFileDataset &d)
          : IteratorImpl(p), d_(d) {}
      std::optional<Element> next() override {
        if (done_)
          return std::nullopt;
        open();
        if (!reader_->read(row_)) {
          done_ = true;
          reader_.reset();
          return std::nullopt;
        }
        std::vector<Element> items;
        items.reserve(row_.size());
        // Moved out: the reader refills the row's tensors either way.
        for (TensorValue &t : row_)
          items.emplace_back(std::move(t));
        return Element::tuple(std::move(items));
      }
      void save(IteratorState &s) override {
        s.put_int(key("done"), done_);
        s.put_int(key("opened"), reader_ != nullptr);
        if (reader_) {
          s.put_int(key("offset"), static_cast<int64_t>(reader_->offset()));
          s.put_int(key("line"), reader_->line_number());
        }
      }
      void restore(const IteratorState &s) override {
        done_ = s.get_int(key("done")) != 0;
        reader_.reset();
        if (!done_ && s.get_int(key("opened"))) {
          open(); // reads the header
          reader_->seek(static_cast<uint64_t>(s.get_int(key("offset"))),
                        s.get_int(key("line")));
        }
      }

    private:
      void open() {
        if (!reader_)
          reader_ =
              std::make_unique<CsvReader>(d_.path_, d_.defaults_, d_.options_,
                                          d_.compression_, d_.bufferSize_);
      }
      const CsvFileDataset &d_;
      std::unique_ptr<CsvReader> reader_;
      std::vector<TensorValue> row_;
      bool done_ = false;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::string path_;
  std::vector<ColumnDefault> defaults_;
  CsvOptions options_;
  Compression compression_;
  size_t bufferSize_;
};

/// make_csv_dataset's rows shuffled, repeated and batched in one stage,
/// when it reads one file at a time and stops at bad records: the
/// elements of
///   files.flat_map(CsvFileDataset).shuffle(buffer, seed).repeat(epochs)
///        .batch(batch_size, drop_remainder)
/// exactly (the same shuffle draws, passes, seeds and errors), without an
/// Element per row. Those stages cost a row some 25 allocations (a Nest
/// and a shared Value per column, the tuple, the stacking, the frees) and
/// were most of the input's time at small batches; here a row is read
/// into a columnar buffer (numbers as bytes, strings moved) and batches
/// are gathered from it. The position saved is this stage's own (the
/// buffer as one tensor per column).
class CsvBatchDataset : public DatasetImpl {
public:
  CsvBatchDataset(std::shared_ptr<const DatasetImpl> files,
                  std::vector<ColumnDefault> defaults, CsvOptions options,
                  Compression compression, size_t bufferSize, bool shuffle,
                  int64_t shuffleBuffer, std::optional<uint64_t> seed,
                  std::optional<int64_t> epochs, int64_t batchSize,
                  bool dropRemainder)
      : files_(std::move(files)), defaults_(std::move(defaults)),
        layout_(defaults_), options_(std::move(options)),
        compression_(compression), bufferSize_(bufferSize), shuffle_(shuffle),
        shuffleBuffer_(shuffleBuffer), seedSpec_(seed),
        seed_(detail::resolve_seed(seed)), epochs_(epochs),
        batchSize_(batchSize), dropRemainder_(dropRemainder) {
    if (shuffle_ && shuffleBuffer_ <= 0)
      throw std::invalid_argument("make_csv_dataset: shuffle_buffer_size "
                                  "must be positive, not " +
                                  std::to_string(shuffleBuffer_));
  }

  std::string describe() const override {
    std::string s = files_->describe() + ".csv_batches(" +
                    compression_name(compression_) + ",";
    for (const ColumnDefault &d : defaults_)
      s += std::string(dtype_name(d.dtype)) + (d.value ? "=" : "!") + ";";
    s += options_.header ? "header" : "";
    if (shuffle_)
      s += ",shuffle=" + std::to_string(shuffleBuffer_) +
           ",seed=" + detail::describe_seed(seedSpec_);
    s += ",repeat=" + (epochs_ ? std::to_string(*epochs_) : std::string());
    return s + ",batch=" + std::to_string(batchSize_) +
           (dropRemainder_ ? ",drop_remainder" : "") + ")";
  }

  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    return std::make_unique<It>(prefix, *this);
  }

private:
  /// Where a row's values sit: numbers packed in a row's bytes, strings
  /// in a row's strings.
  struct Layout {
    std::vector<DType> dtypes;
    std::vector<size_t> slot; // byte offset, or index among the strings
    size_t rowBytes = 0, rowStrings = 0;

    explicit Layout(const std::vector<ColumnDefault> &defaults) {
      for (const ColumnDefault &d : defaults) {
        dtypes.push_back(d.dtype);
        if (d.dtype == DType::String) {
          slot.push_back(rowStrings++);
        } else {
          slot.push_back(rowBytes);
          rowBytes += dtype_size(d.dtype);
        }
      }
    }
    bool isString(size_t c) const { return dtypes[c] == DType::String; }
  };

  /// The shuffle buffer, row-major: a drawn row is a few adjacent cache
  /// lines, not one line per column (the buffer is ~10000 rows).
  struct Rows {
    const Layout *layout;
    std::string bytes;
    std::vector<std::string> strings;
    size_t size = 0;

    explicit Rows(const Layout &l) : layout(&l) {}
    void clear() {
      bytes.clear();
      strings.clear();
      size = 0;
    }
    /// Appends a reader's row (scalars; its strings are moved out).
    void push(std::vector<TensorValue> &row) {
      const Layout &l = *layout;
      for (size_t c = 0; c < l.dtypes.size(); ++c)
        if (!l.isString(c))
          bytes += row[c].data;
      for (size_t c = 0; c < l.dtypes.size(); ++c)
        if (l.isString(c))
          strings.push_back(std::move(row[c].strings[0]));
      ++size;
    }
    /// Removes row `i`, the last row taking its place (shuffle's swap).
    void removeSwapLast(size_t i) {
      const Layout &l = *layout;
      size_t last = size - 1;
      if (i != last) {
        std::memcpy(&bytes[i * l.rowBytes], &bytes[last * l.rowBytes],
                    l.rowBytes);
        for (size_t k = 0; k < l.rowStrings; ++k)
          strings[i * l.rowStrings + k] =
              std::move(strings[last * l.rowStrings + k]);
      }
      bytes.resize(last * l.rowBytes);
      strings.resize(last * l.rowStrings);
      --size;
    }
    /// A saved state: one tensor [size] per column.
    Element state() const {
      const Layout &l = *layout;
      std::vector<Element> out;
      auto n = static_cast<int64_t>(size);
      for (size_t c = 0; c < l.dtypes.size(); ++c) {
        if (l.isString(c)) {
          std::vector<std::string> v;
          v.reserve(size);
          for (size_t r = 0; r < size; ++r)
            v.push_back(strings[r * l.rowStrings + l.slot[c]]);
          out.emplace_back(TensorValue::of_strings({n}, std::move(v)));
        } else {
          size_t w = dtype_size(l.dtypes[c]);
          std::string b;
          b.reserve(size * w);
          for (size_t r = 0; r < size; ++r)
            b.append(bytes, r * l.rowBytes + l.slot[c], w);
          out.emplace_back(TensorValue::from_bytes(l.dtypes[c], {n}, b));
        }
      }
      return Element::tuple(std::move(out));
    }
    /// The inverse of state(); DataError for another structure.
    void restore(const std::vector<Element> &items) {
      const Layout &l = *layout;
      clear();
      if (items.size() != l.dtypes.size())
        throw DataError("input pipeline state: a CSV buffer of " +
                        std::to_string(items.size()) + " columns, not " +
                        std::to_string(l.dtypes.size()));
      for (size_t c = 0; c < items.size(); ++c) {
        const TensorValue &t = tensor(items[c]);
        if (t.dtype != l.dtypes[c] || t.shape.size() != 1 ||
            t.shape[0] != tensor(items[0]).shape.at(0))
          throw DataError("input pipeline state: CSV buffer column " +
                          std::to_string(c) + " is " + t.spec().str());
      }
      size = static_cast<size_t>(tensor(items[0]).shape[0]);
      bytes.resize(size * l.rowBytes);
      strings.resize(size * l.rowStrings);
      for (size_t c = 0; c < items.size(); ++c) {
        const TensorValue &t = tensor(items[c]);
        if (l.isString(c)) {
          for (size_t r = 0; r < size; ++r)
            strings[r * l.rowStrings + l.slot[c]] = t.strings[r];
          continue;
        }
        size_t w = dtype_size(l.dtypes[c]);
        for (size_t r = 0; r < size; ++r)
          std::memcpy(&bytes[r * l.rowBytes + l.slot[c]], &t.data[r * w], w);
      }
    }
  };

  /// A batch being gathered, one tensor per column.
  struct Batch {
    const Layout *layout;
    std::vector<TensorValue> columns;
    int64_t rows = 0;

    Batch(const Layout &l, int64_t capacity) : layout(&l) {
      for (size_t c = 0; c < l.dtypes.size(); ++c) {
        TensorValue t;
        t.dtype = l.dtypes[c];
        if (l.isString(c))
          t.strings.reserve(static_cast<size_t>(capacity));
        else
          t.data.reserve(static_cast<size_t>(capacity) * dtype_size(t.dtype));
        columns.push_back(std::move(t));
      }
    }
    /// Appends row `i` of `from` (its strings moved out).
    void add(Rows &from, size_t i) {
      const Layout &l = *layout;
      for (size_t c = 0; c < columns.size(); ++c) {
        if (l.isString(c))
          columns[c].strings.push_back(
              std::move(from.strings[i * l.rowStrings + l.slot[c]]));
        else
          columns[c].data.append(from.bytes, i * l.rowBytes + l.slot[c],
                                 dtype_size(l.dtypes[c]));
      }
      ++rows;
    }
    /// Appends a reader's row (its strings moved out).
    void add(std::vector<TensorValue> &row) {
      for (size_t c = 0; c < columns.size(); ++c) {
        if (layout->isString(c))
          columns[c].strings.push_back(std::move(row[c].strings[0]));
        else
          columns[c].data += row[c].data;
      }
      ++rows;
    }
    /// The batch: a tuple of [rows] tensors, as batch stacks scalars.
    Element release() {
      std::vector<Element> out;
      out.reserve(columns.size());
      for (TensorValue &t : columns) {
        t.shape = {rows};
        out.emplace_back(std::move(t));
      }
      return Element::tuple(std::move(out));
    }
  };

  class It : public IteratorImpl {
  public:
    It(const std::string &p, const CsvBatchDataset &d)
        : IteratorImpl(p), d_(d), buffer_(d.layout_) {
      // The first pass exists from the start, as repeat's (its seeds are
      // in a state saved before the first batch).
      if (!d_.epochs_ || *d_.epochs_ > 0)
        openPass();
    }

    std::optional<Element> next() override {
      Batch batch(d_.layout_, std::min<int64_t>(d_.batchSize_, 4096));
      while (batch.rows < d_.batchSize_ && repeatNext(batch)) {
      }
      if (batch.rows == 0 || (d_.dropRemainder_ && batch.rows < d_.batchSize_))
        return std::nullopt;
      return batch.release();
    }

    void save(IteratorState &s) override {
      s.put_int(key("epoch"), epoch_);
      s.put_int(key("saw_element"), sawElement_);
      s.put_int(key("open"), passOpen_);
      if (!passOpen_)
        return;
      s.put_int(key("seed"), static_cast<int64_t>(d_.seed_.load()));
      s.put_int(key("iteration"), iteration_);
      s.put_int(key("rng"), static_cast<int64_t>(rng_.position()));
      s.put_int(key("input_done"), inputDone_);
      s.put_element(key("buffer"), buffer_.state());
      s.put_int(key("files_done"), filesDone_);
      s.put_int(key("in_file"), inFile_);
      if (inFile_) {
        s.put_bytes(key("file"), file_);
        s.put_int(key("opened"), reader_ != nullptr);
        if (reader_) {
          s.put_int(key("offset"), static_cast<int64_t>(reader_->offset()));
          s.put_int(key("line"), reader_->line_number());
        }
      }
      files_->save(s);
    }

    void restore(const IteratorState &s) override {
      epoch_ = s.get_int(key("epoch"));
      sawElement_ = s.get_int(key("saw_element")) != 0;
      passOpen_ = false;
      files_.reset();
      reader_.reset();
      buffer_.clear();
      if (!s.get_int(key("open")))
        return;
      d_.seed_.store(static_cast<uint64_t>(s.get_int(key("seed"))));
      iteration_ = s.get_int(key("iteration"));
      if (d_.shuffle_)
        d_.iterations_.store(iteration_ + 1);
      rng_ = detail::RandomStream(streamSeed(),
                                  static_cast<uint64_t>(s.get_int(key("rng"))));
      inputDone_ = s.get_int(key("input_done")) != 0;
      buffer_.restore(s.get_tuple(key("buffer")));
      filesDone_ = s.get_int(key("files_done")) != 0;
      inFile_ = s.get_int(key("in_file")) != 0;
      files_ = d_.files_->make_iterator(prefix() + "/files");
      files_->restore(s);
      passOpen_ = true;
      if (inFile_) {
        file_ = s.get_bytes(key("file"));
        if (s.get_int(key("opened"))) {
          openReader(); // reads the header
          reader_->seek(static_cast<uint64_t>(s.get_int(key("offset"))),
                        s.get_int(key("line")));
        }
      }
    }

  private:
    uint64_t streamSeed() const {
      return detail::mix64(d_.seed_.load() ^
                           detail::mix64(static_cast<uint64_t>(iteration_)));
    }

    /// A pass: shuffle's iterator over the files' rows (a new shuffle
    /// iteration, a new iteration of the file list).
    void openPass() {
      iteration_ = d_.shuffle_ ? d_.iterations_.fetch_add(1) : 0;
      rng_ = detail::RandomStream(streamSeed());
      buffer_.clear();
      inputDone_ = false;
      files_ = d_.files_->make_iterator(prefix() + "/files");
      reader_.reset();
      inFile_ = false;
      filesDone_ = false;
      passOpen_ = true;
    }

    void openReader() {
      reader_ = std::make_unique<CsvReader>(file_, d_.defaults_, d_.options_,
                                            d_.compression_, d_.bufferSize_);
    }

    /// repeat's next(): the next row of this pass or of the next ones.
    bool repeatNext(Batch &out) {
      while (!d_.epochs_ || epoch_ < *d_.epochs_) {
        if (!passOpen_)
          openPass();
        if (passNext(out)) {
          sawElement_ = true;
          return true;
        }
        passOpen_ = false;
        files_.reset();
        reader_.reset();
        ++epoch_;
        // An endless repeat of an empty pass ends (as RepeatDataset's).
        if (!d_.epochs_ && !sawElement_)
          return false;
        sawElement_ = false;
      }
      return false;
    }

    /// shuffle's next(): fill the buffer, take a uniformly drawn row.
    bool passNext(Batch &out) {
      if (!d_.shuffle_) {
        if (!readRow())
          return false;
        out.add(row_);
        return true;
      }
      while (!inputDone_ &&
             static_cast<int64_t>(buffer_.size) < d_.shuffleBuffer_) {
        if (!readRow()) {
          inputDone_ = true;
          break;
        }
        buffer_.push(row_);
      }
      if (buffer_.size == 0)
        return false;
      size_t i = rng_.next_below(buffer_.size);
      out.add(buffer_, i);
      buffer_.removeSwapLast(i);
      return true;
    }

    /// flat_map's next(): the next row of the files, in row_.
    bool readRow() {
      for (;;) {
        if (!inFile_) {
          if (filesDone_)
            return false;
          std::optional<Element> name = files_->next();
          if (!name) {
            filesDone_ = true;
            return false;
          }
          file_ = fileName(*name, "make_csv_dataset");
          inFile_ = true;
        }
        if (!reader_)
          openReader();
        if (reader_->read(row_))
          return true;
        reader_.reset();
        inFile_ = false;
      }
    }

    const CsvBatchDataset &d_;
    // repeat
    int64_t epoch_ = 0;
    bool sawElement_ = false;
    bool passOpen_ = false;
    // shuffle
    int64_t iteration_ = 0;
    detail::RandomStream rng_{0};
    Rows buffer_;
    bool inputDone_ = false;
    // the files
    std::unique_ptr<IteratorImpl> files_;
    bool filesDone_ = false;
    bool inFile_ = false;
    std::string file_;
    std::unique_ptr<CsvReader> reader_;
    std::vector<TensorValue> row_;
  };

  std::shared_ptr<const DatasetImpl> files_;
  std::vector<ColumnDefault> defaults_;
  Layout layout_;
  CsvOptions options_;
  Compression compression_;
  size_t bufferSize_;
  bool shuffle_;
  int64_t shuffleBuffer_;
  std::optional<uint64_t> seedSpec_;
  // As ShuffleDataset's: a restored iteration brings its seed (drawn at
  // random when none was given) and its count to the later ones.
  mutable std::atomic<uint64_t> seed_;
  mutable std::atomic<int64_t> iterations_{0};
  std::optional<int64_t> epochs_;
  int64_t batchSize_;
  bool dropRemainder_;
};

} // namespace

Dataset TFRecordDataset(const Dataset &filenames,
                        const std::string &compression_type,
                        int64_t buffer_size, int64_t num_parallel_reads) {
  return recordFiles<TFRecordReader>(filenames, "TFRecordDataset",
                                     compression_type, buffer_size,
                                     num_parallel_reads);
}

Dataset TFRecordDataset(std::vector<std::string> filenames,
                        const std::string &compression_type,
                        int64_t buffer_size, int64_t num_parallel_reads) {
  return TFRecordDataset(namesDataset(std::move(filenames), "TFRecordDataset"),
                         compression_type, buffer_size, num_parallel_reads);
}

Dataset TextLineDataset(const Dataset &filenames,
                        const std::string &compression_type,
                        int64_t buffer_size, int64_t num_parallel_reads) {
  return recordFiles<TextLineReader>(filenames, "TextLineDataset",
                                     compression_type, buffer_size,
                                     num_parallel_reads);
}

Dataset TextLineDataset(std::vector<std::string> filenames,
                        const std::string &compression_type,
                        int64_t buffer_size, int64_t num_parallel_reads) {
  return TextLineDataset(namesDataset(std::move(filenames), "TextLineDataset"),
                         compression_type, buffer_size, num_parallel_reads);
}

Dataset CsvDataset(const Dataset &filenames,
                   std::vector<ColumnDefault> record_defaults,
                   CsvOptions options, const std::string &compression_type,
                   int64_t buffer_size) {
  if (record_defaults.empty())
    throw std::invalid_argument("CsvDataset: no record_defaults");
  Compression c = parse_compression(compression_type);
  size_t buffer = checkBuffer(buffer_size, "CsvDataset");
  return filenames.flat_map(
      [record_defaults, options, c, buffer](const Element &name) {
        return Dataset::from_impl(std::make_shared<CsvFileDataset>(
            fileName(name, "CsvDataset"), record_defaults, options, c, buffer));
      });
}

Dataset CsvDataset(std::vector<std::string> filenames,
                   std::vector<ColumnDefault> record_defaults,
                   CsvOptions options, const std::string &compression_type,
                   int64_t buffer_size) {
  return CsvDataset(namesDataset(std::move(filenames), "CsvDataset"),
                    std::move(record_defaults), std::move(options),
                    compression_type, buffer_size);
}

Dataset make_csv_dataset(std::vector<std::string> file_pattern,
                         int64_t batch_size, MakeCsvOptions o) {
  if (batch_size <= 0)
    throw std::invalid_argument("make_csv_dataset: batch_size must be "
                                "positive, not " +
                                std::to_string(batch_size));
  Compression c = parse_compression(o.compression_type);
  // Globbed once: the sorted names for the header and inference, and
  // (what list_files(shuffle) is) a shuffle stage over them to read.
  Dataset sorted = Dataset::list_files(file_pattern, false);
  std::vector<std::string> names;
  for (const Element &f : sorted)
    names.push_back(tensor(f).strings.at(0));
  Dataset files = o.shuffle ? sorted.shuffle(static_cast<int64_t>(names.size()),
                                             o.shuffle_seed)
                            : sorted;

  CsvOptions csv;
  csv.field_delim = o.field_delim;
  csv.use_quote_delim = o.use_quote_delim;
  csv.na_value = o.na_value;
  csv.header = o.header;
  std::vector<std::string> columns = o.column_names;
  if (columns.empty()) {
    if (!o.header)
      throw std::invalid_argument("make_csv_dataset: column_names are "
                                  "required when the files have no header");
    columns = read_csv_header(names, csv, c);
  }
  csv.column_names = columns;
  auto indexOf = [&](const std::string &name, const char *what) {
    auto it = std::find(columns.begin(), columns.end(), name);
    if (it == columns.end()) {
      std::string all;
      for (const std::string &n : columns)
        all += (all.empty() ? "" : ", ") + n;
      throw DataError("make_csv_dataset: " + std::string(what) + " '" + name +
                      "' is not a column of the files (" + all + ")");
    }
    return static_cast<int64_t>(it - columns.begin());
  };
  // The output columns, in file order.
  std::vector<int64_t> selected;
  if (o.select_columns.empty()) {
    for (size_t i = 0; i < columns.size(); ++i)
      selected.push_back(static_cast<int64_t>(i));
  } else {
    for (const std::string &n : o.select_columns)
      selected.push_back(indexOf(n, "select_columns entry"));
    std::sort(selected.begin(), selected.end());
    selected.erase(std::unique(selected.begin(), selected.end()),
                   selected.end());
    csv.select_cols = selected;
  }
  if (!o.label_name.empty()) {
    int64_t label = indexOf(o.label_name, "label_name");
    if (std::find(selected.begin(), selected.end(), label) == selected.end())
      throw DataError("make_csv_dataset: label_name '" + o.label_name +
                      "' is not among select_columns");
  }
  std::vector<ColumnDefault> defaults = o.column_defaults;
  if (defaults.empty())
    defaults =
        infer_column_defaults(names, columns, o.num_rows_for_inference, csv, c);
  if (defaults.size() != selected.size())
    throw std::invalid_argument(
        "make_csv_dataset: " + std::to_string(defaults.size()) +
        " column_defaults for " + std::to_string(selected.size()) +
        " selected columns");

  int64_t reads = o.num_parallel_reads == AUTOTUNE ? autotune_threads()
                                                   : o.num_parallel_reads;
  if (reads <= 0)
    throw std::invalid_argument("make_csv_dataset: num_parallel_reads must be "
                                "positive or AUTOTUNE");
  std::vector<std::string> outNames;
  for (int64_t i : selected)
    outNames.push_back(columns[static_cast<size_t>(i)]);
  std::string label = o.label_name;
  auto toDict = [outNames, label](Element batch) {
    std::map<std::string, Element> features;
    std::optional<Element> labels;
    for (size_t i = 0; i < outNames.size(); ++i) {
      if (outNames[i] == label)
        labels = batch[i];
      else
        features.emplace(outNames[i], batch[i]);
    }
    Element f = Element::dict(std::move(features));
    if (!labels)
      return f;
    return Element::tuple({std::move(f), std::move(*labels)});
  };
  if (reads == 1 && !o.ignore_errors)
    return Dataset::from_impl(std::make_shared<CsvBatchDataset>(
                                  files.impl(), defaults, csv, c,
                                  static_cast<size_t>(kDefaultReadBuffer),
                                  o.shuffle, o.shuffle_buffer_size,
                                  o.shuffle_seed, o.num_epochs, batch_size,
                                  /*dropRemainder=*/!o.num_epochs))
        .map(toDict)
        .prefetch(o.prefetch_buffer_size);

  Dataset::DatasetFn one = [defaults, csv, c](const Element &name) {
    return Dataset::from_impl(std::make_shared<CsvFileDataset>(
        fileName(name, "make_csv_dataset"), defaults, csv, c,
        static_cast<size_t>(kDefaultReadBuffer)));
  };
  Dataset rows = readFiles(files, std::move(one), reads == 1 ? 0 : reads);
  if (o.ignore_errors)
    rows = rows.ignore_errors();
  if (o.shuffle)
    rows = rows.shuffle(o.shuffle_buffer_size, o.shuffle_seed);
  rows = rows.repeat(o.num_epochs);
  return rows.batch(batch_size, /*drop_remainder=*/!o.num_epochs)
      .map(toDict)
      .prefetch(o.prefetch_buffer_size);
}

} // namespace data
} // namespace estc
