//===- ZipArchive.cpp - Zip archives in memory, through libzip -----------===//

#include "lib/Keras/ZipArchive.h"

#include "lib/Support/Printable.h"

#include <zip.h>

#include <algorithm>
#include <cstdint>
#include <memory>

namespace estc {
namespace keras {

namespace {
std::string zipErrorText(zip_error_t *e) {
  std::string s = zip_error_strerror(e);
  return escape_control_chars(s);
}

struct ArchiveCloser {
  void operator()(zip_t *z) const { zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t *f) const { zip_fclose(f); }
};
struct SourceFreer {
  void operator()(zip_source_t *s) const { zip_source_free(s); }
};
} // namespace

ZipEntries readZip(std::string_view bytes, uint64_t maxEntryBytes) {
  // libzip takes no bytes at all for an empty archive; a file is not one.
  if (bytes.empty())
    throw ZipError("an empty file, not a zip archive");
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t *src =
      zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!src) {
    std::string what = zipErrorText(&error);
    zip_error_fini(&error);
    throw ZipError("cannot read the zip archive: " + what);
  }
  // ZIP_CHECKCONS: the central directory must agree with the local headers.
  std::unique_ptr<zip_t, ArchiveCloser> za(
      zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!za) {
    zip_source_free(src);
    std::string what = zipErrorText(&error);
    zip_error_fini(&error);
    throw ZipError("corrupt or truncated zip archive: " + what);
  }
  zip_error_fini(&error);

  ZipEntries entries;
  zip_int64_t n = zip_get_num_entries(za.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za.get(), i, 0, &st) != 0 || !st.name)
      throw ZipError("corrupt zip archive: cannot read entry " +
                     std::to_string(i) + ": " +
                     escape_control_chars(zip_strerror(za.get())));
    std::string name = st.name;
    if (!(st.valid & ZIP_STAT_SIZE))
      throw ZipError("corrupt zip archive: entry '" +
                     escape_control_chars(name) + "' has no size");
    if (st.size > maxEntryBytes)
      throw ZipError("zip entry '" + escape_control_chars(name) + "' is " +
                     std::to_string(st.size) + " bytes, over the limit of " +
                     std::to_string(maxEntryBytes));
    std::unique_ptr<zip_file_t, FileCloser> f(zip_fopen_index(za.get(), i, 0));
    if (!f)
      throw ZipError("cannot read zip entry '" + escape_control_chars(name) +
                     "': " + escape_control_chars(zip_strerror(za.get())));
    std::string data;
    // Grows with what is really there: a size in a corrupt header is not
    // trusted with an allocation.
    data.reserve(std::min<uint64_t>(st.size, bytes.size() + (1u << 20)));
    char buf[1 << 16];
    for (;;) {
      zip_int64_t got = zip_fread(f.get(), buf, sizeof buf);
      if (got < 0)
        throw ZipError(
            "corrupt zip entry '" + escape_control_chars(name) +
            "': " + escape_control_chars(zip_file_strerror(f.get())));
      if (got == 0)
        break;
      if (data.size() + uint64_t(got) > st.size)
        throw ZipError("corrupt zip entry '" + escape_control_chars(name) +
                       "': more data than its size " + std::to_string(st.size));
      data.append(buf, static_cast<size_t>(got));
    }
    if (data.size() != st.size)
      throw ZipError("truncated zip entry '" + escape_control_chars(name) +
                     "': " + std::to_string(data.size()) + " of " +
                     std::to_string(st.size) + " bytes");
    entries.emplace_back(std::move(name), std::move(data));
  }
  return entries;
}

std::string writeZip(const ZipEntries &entries) {
  // libzip writes nothing for an archive without entries: the archive is
  // its end of central directory record alone.
  if (entries.empty())
    return std::string("PK\x05\x06", 4) + std::string(18, '\0');
  zip_error_t error;
  zip_error_init(&error);
  std::unique_ptr<zip_source_t, SourceFreer> src(
      zip_source_buffer_create(nullptr, 0, 0, &error));
  if (!src) {
    std::string what = zipErrorText(&error);
    zip_error_fini(&error);
    throw ZipError("cannot create a zip archive: " + what);
  }
  // The archive frees its source on close; this keeps it for reading back.
  zip_source_keep(src.get());
  zip_t *za = zip_open_from_source(src.get(), ZIP_TRUNCATE, &error);
  if (!za) {
    zip_source_free(src.get()); // the reference kept above
    std::string what = zipErrorText(&error);
    zip_error_fini(&error);
    throw ZipError("cannot create a zip archive: " + what);
  }
  zip_error_fini(&error);
  for (const auto &[name, data] : entries) {
    zip_source_t *entry = zip_source_buffer(za, data.data(), data.size(), 0);
    zip_int64_t index =
        entry ? zip_file_add(za, name.c_str(), entry, ZIP_FL_ENC_UTF_8) : -1;
    if (index < 0) {
      std::string what = escape_control_chars(zip_strerror(za));
      if (entry)
        zip_source_free(entry);
      zip_discard(za);
      throw ZipError("cannot add '" + escape_control_chars(name) +
                     "' to a zip archive: " + what);
    }
    zip_set_file_compression(za, static_cast<zip_uint64_t>(index), ZIP_CM_STORE,
                             0);
  }
  if (zip_close(za) != 0) {
    std::string what = escape_control_chars(zip_strerror(za));
    zip_discard(za);
    throw ZipError("cannot write a zip archive: " + what);
  }
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(src.get(), &st) != 0 || zip_source_open(src.get()) != 0)
    throw ZipError("cannot read back the zip archive written");
  std::string out(static_cast<size_t>(st.size), '\0');
  zip_int64_t got = zip_source_read(src.get(), out.data(), out.size());
  zip_source_close(src.get());
  if (got < 0 || static_cast<uint64_t>(got) != st.size)
    throw ZipError("cannot read back the zip archive written");
  return out;
}

} // namespace keras
} // namespace estc
