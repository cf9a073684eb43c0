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

namespace estc {
namespace data {

using detail::DatasetImpl;
using detail::IteratorImpl;

namespace {

/// The records of one file, read with Reader (TFRecordReader, ...).
template <typename Reader> class RecordFileDataset : public DatasetImpl {
public:
  RecordFileDataset(std::string kind, std::string path,
                    Compression compression, size_t bufferSize)
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

/// filenames.flat_map(one file), or interleaved num_parallel_reads at a
/// time with read-ahead threads.
template <typename Reader>
Dataset overFiles(const Dataset &filenames, const char *kind,
                  Compression compression, size_t bufferSize,
                  int64_t numParallelReads) {
  std::string k = kind;
  Dataset::DatasetFn one = [k, compression,
                            bufferSize](const Element &name) {
    return Dataset::from_impl(std::make_shared<RecordFileDataset<Reader>>(
        k, fileName(name, k.c_str()), compression, bufferSize));
  };
  if (numParallelReads == 0)
    return filenames.flat_map(std::move(one));
  int64_t cycle =
      numParallelReads == AUTOTUNE ? autotune_threads() : numParallelReads;
  return filenames.interleave(std::move(one), cycle, 1, cycle);
}

} // namespace

Dataset TFRecordDataset(const Dataset &filenames,
                        const std::string &compression_type,
                        int64_t buffer_size, int64_t num_parallel_reads) {
  if (num_parallel_reads < 0 && num_parallel_reads != AUTOTUNE)
    throw std::invalid_argument("TFRecordDataset: num_parallel_reads must be "
                                "0, positive or AUTOTUNE");
  return overFiles<TFRecordReader>(
      filenames, "TFRecordDataset", parse_compression(compression_type),
      checkBuffer(buffer_size, "TFRecordDataset"), num_parallel_reads);
}

Dataset TFRecordDataset(std::vector<std::string> filenames,
                        const std::string &compression_type,
                        int64_t buffer_size, int64_t num_parallel_reads) {
  return TFRecordDataset(namesDataset(std::move(filenames), "TFRecordDataset"),
                         compression_type, buffer_size, num_parallel_reads);
}

} // namespace data
} // namespace estc
