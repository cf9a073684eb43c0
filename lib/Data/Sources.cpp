//===- Sources.cpp - File datasets: one stage per file, interleaved -----===//
//
// A file dataset is a Dataset of file names interleaved over a one-file
// stage (RecordFileDataset), which wraps a reader with read(std::string &),
// offset() and seek(offset): its position is the offset of the next record.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/InputStream.h"
#include "lib/Data/Readers.h"
#include "lib/Data/TFRecord.h"
#include "lib/Data/TextLine.h"

#include <algorithm>
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
  std::vector<std::string> outNames;
  for (int64_t i : selected)
    outNames.push_back(columns[static_cast<size_t>(i)]);
  std::string label = o.label_name;
  return rows.batch(batch_size, /*drop_remainder=*/!o.num_epochs)
      .map([outNames, label](Element batch) {
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
      })
      .prefetch(o.prefetch_buffer_size);
}

} // namespace data
} // namespace estc
