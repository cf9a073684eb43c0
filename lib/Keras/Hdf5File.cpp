//===- Hdf5File.cpp - HDF5 files in memory, through libhdf5 --------------===//

#include "lib/Keras/Hdf5File.h"

#include "lib/Support/Printable.h"

#include <hdf5.h>

#include <atomic>
#include <cstring>

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is 64-bit");

namespace estc {
namespace keras {

namespace {
std::mutex &hdf5Mutex() {
  static std::mutex m;
  return m;
}

// An HDF5 identifier closed by its own close function.
class Id {
public:
  Id() = default;
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Id(Id &&o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Id &operator=(Id &&o) noexcept {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
    return *this;
  }
  ~Id() { reset(); }
  void reset() {
    if (id_ >= 0 && close_)
      close_(id_);
    id_ = -1;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// "a/b" for the object at `path` under the root; "/" for the root.
std::string rooted(const std::string &path) {
  return path.empty() ? std::string("/") : path;
}

std::vector<int64_t> dimsOf(hid_t space, const std::string &what) {
  int nd = H5Sget_simple_extent_ndims(space);
  if (nd < 0 || nd > 32)
    throw Hdf5Error(what + " has no simple dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(nd));
  if (nd > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    throw Hdf5Error(what + ": cannot read its dimensions");
  return std::vector<int64_t>(dims.begin(), dims.end());
}

uint64_t checkedCount(const std::vector<int64_t> &dims,
                      const std::string &what) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && n > (uint64_t(1) << 40) / uint64_t(d)))
      throw Hdf5Error(what + ": shape " + shape_string(dims) + " is too large");
    n *= uint64_t(d);
  }
  return n;
}

// The half-precision type h5py writes (numpy float16), little-endian.
Id halfType() {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  return Id(t, H5Tclose);
}

std::string typeName(hid_t type) {
  size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
  case H5T_INTEGER:
    return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") +
           std::to_string(size * 8);
  case H5T_FLOAT:
    return "float" + std::to_string(size * 8);
  case H5T_STRING:
    return "string";
  case H5T_COMPOUND:
    return "compound";
  case H5T_ENUM:
    return "enum";
  case H5T_OPAQUE:
    return "opaque";
  case H5T_ARRAY:
    return "array";
  case H5T_VLEN:
    return "vlen";
  case H5T_REFERENCE:
    return "reference";
  case H5T_BITFIELD:
    return "bitfield";
  default:
    return "unknown type";
  }
}

// The dtype a dataset of `type` reads as, and the memory type to read it
// with; Invalid when estc has no such dtype.
std::pair<DType, Id> memoryTypeFor(hid_t type) {
  size_t size = H5Tget_size(type);
  H5T_class_t cls = H5Tget_class(type);
  if (cls == H5T_FLOAT && size == 4)
    return {DType::Float32, Id(H5Tcopy(H5T_NATIVE_FLOAT), H5Tclose)};
  if (cls == H5T_FLOAT && size == 8)
    return {DType::Float64, Id(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose)};
  if (cls == H5T_FLOAT && size == 2 && H5Tget_ebias(type) == 15)
    return {DType::Float16, halfType()};
  if (cls == H5T_INTEGER && size <= 4 &&
      !(size == 4 && H5Tget_sign(type) == H5T_SGN_NONE))
    return {DType::Int32, Id(H5Tcopy(H5T_NATIVE_INT32), H5Tclose)};
  if (cls == H5T_INTEGER && size == 8 && H5Tget_sign(type) != H5T_SGN_NONE)
    return {DType::Int64, Id(H5Tcopy(H5T_NATIVE_INT64), H5Tclose)};
  if (cls == H5T_INTEGER && size == 4)
    return {DType::Int64, Id(H5Tcopy(H5T_NATIVE_INT64), H5Tclose)};
  // numpy's bool, as h5py writes it: an enum of int8 {FALSE: 0, TRUE: 1}.
  if (cls == H5T_ENUM && size == 1 && H5Tget_nmembers(type) == 2)
    return {DType::Bool,
            Id(H5Tget_native_type(type, H5T_DIR_ASCEND), H5Tclose)};
  return {DType::Invalid, Id()};
}

Id memoryTypeOf(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return Id(H5Tcopy(H5T_NATIVE_FLOAT), H5Tclose);
  case DType::Float64:
    return Id(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose);
  case DType::Float16:
    return halfType();
  case DType::Int32:
    return Id(H5Tcopy(H5T_NATIVE_INT32), H5Tclose);
  case DType::Int64:
    return Id(H5Tcopy(H5T_NATIVE_INT64), H5Tclose);
  default:
    return Id();
  }
}

std::atomic<uint64_t> imageCounter{0};
} // namespace

bool isHdf5(std::string_view bytes) {
  return bytes.substr(0, 8) == std::string_view("\x89HDF\r\n\x1a\n", 8);
}

Hdf5File::Hdf5File(std::string_view bytes, bool writable)
    : lock_(hdf5Mutex()), fileBytes_(bytes.size()) {
  static bool quiet = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)quiet;
  if (!isHdf5(bytes))
    throw Hdf5Error("not an HDF5 file (no HDF5 signature)");
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid() || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
      H5Pset_file_image(fapl.get(), const_cast<char *>(bytes.data()),
                        bytes.size()) < 0)
    throw Hdf5Error("cannot set up HDF5's in-memory driver");
  // A name of its own: HDF5 takes two open files of one name for the same.
  std::string name = "estc-keras-image-" + std::to_string(imageCounter++);
  file_ = H5Fopen(name.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY,
                  fapl.get());
  if (file_ < 0)
    throw Hdf5Error("corrupt or truncated HDF5 file");
}

Hdf5File::~Hdf5File() {
  if (file_ >= 0)
    H5Fclose(file_);
}

Hdf5File::Kind Hdf5File::kind(const std::string &path) const {
  if (path.empty())
    return Kind::Group;
  // H5Lexists fails when a group on the way is missing: check each part.
  size_t at = 0;
  while (true) {
    size_t slash = path.find('/', at);
    std::string prefix = path.substr(0, slash);
    if (prefix.empty() || prefix.back() == '/')
      return Kind::None;
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0)
      return Kind::None;
    // Only links inside this file: an external link would open another
    // file of the machine's.
    H5L_info_t link;
    if (H5Lget_info(file_, prefix.c_str(), &link, H5P_DEFAULT) < 0 ||
        (link.type != H5L_TYPE_HARD && link.type != H5L_TYPE_SOFT))
      return Kind::Other;
    if (slash == std::string::npos)
      break;
    at = slash + 1;
  }
  Id obj(H5Oopen(file_, path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid())
    return Kind::None;
  switch (H5Iget_type(obj.get())) {
  case H5I_GROUP:
    return Kind::Group;
  case H5I_DATASET:
    return Kind::Dataset;
  default:
    return Kind::Other;
  }
}

std::vector<std::string> Hdf5File::members(const std::string &path) const {
  Id group(H5Gopen2(file_, rooted(path).c_str(), H5P_DEFAULT), H5Gclose);
  if (!group.valid())
    throw Hdf5Error("no group '" + escape_control_chars(path) + "'");
  H5G_info_t info;
  if (H5Gget_info(group.get(), &info) < 0)
    throw Hdf5Error("cannot list group '" + escape_control_chars(path) + "'");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t n = H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC,
                                   i, nullptr, 0, H5P_DEFAULT);
    if (n < 0)
      throw Hdf5Error("cannot list group '" + escape_control_chars(path) + "'");
    std::string name(static_cast<size_t>(n) + 1, '\0');
    H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i,
                       name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<size_t>(n));
    names.push_back(std::move(name));
  }
  return names;
}

bool Hdf5File::hasAttribute(const std::string &object,
                            const std::string &name) const {
  return H5Aexists_by_name(file_, rooted(object).c_str(), name.c_str(),
                           H5P_DEFAULT) > 0;
}

namespace {
// Every string of the attribute `a` (a scalar is one); an empty array of
// any type is no strings.
std::vector<std::string> readStrings(hid_t a, const std::string &what) {
  Id type(H5Aget_type(a), H5Tclose);
  Id space(H5Aget_space(a), H5Sclose);
  if (!type.valid() || !space.valid())
    throw Hdf5Error("cannot read attribute " + what);
  hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0 || n > (1 << 24))
    throw Hdf5Error("cannot read attribute " + what);
  if (n == 0)
    return {};
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw Hdf5Error("attribute " + what + " is " + typeName(type.get()) +
                    ", not a string");
  std::vector<std::string> out;
  if (H5Tis_variable_str(type.get()) > 0) {
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    std::vector<char *> ptrs(static_cast<size_t>(n), nullptr);
    if (H5Aread(a, mem.get(), ptrs.data()) < 0)
      throw Hdf5Error("cannot read attribute " + what);
    for (char *p : ptrs)
      out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
  } else {
    size_t size = H5Tget_size(type.get());
    if (size == 0 || size > (1u << 28) / static_cast<size_t>(n))
      throw Hdf5Error("attribute " + what + " is too large");
    std::string buf(size * static_cast<size_t>(n), '\0');
    if (H5Aread(a, type.get(), buf.data()) < 0)
      throw Hdf5Error("cannot read attribute " + what);
    for (hssize_t i = 0; i < n; ++i) {
      std::string s = buf.substr(static_cast<size_t>(i) * size, size);
      size_t end = s.find('\0');
      if (end != std::string::npos)
        s.resize(end);
      if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD)
        while (!s.empty() && s.back() == ' ')
          s.pop_back();
      out.push_back(std::move(s));
    }
  }
  return out;
}
} // namespace

std::optional<std::string>
Hdf5File::stringAttribute(const std::string &object,
                          const std::string &name) const {
  if (!hasAttribute(object, name))
    return std::nullopt;
  std::string what = "'" + escape_control_chars(name) + "' of '" +
                     escape_control_chars(rooted(object)) + "'";
  Id a(H5Aopen_by_name(file_, rooted(object).c_str(), name.c_str(), H5P_DEFAULT,
                       H5P_DEFAULT),
       H5Aclose);
  if (!a.valid())
    throw Hdf5Error("cannot open attribute " + what);
  std::vector<std::string> v = readStrings(a.get(), what);
  if (v.size() != 1)
    throw Hdf5Error("attribute " + what + " holds " + std::to_string(v.size()) +
                    " strings, not one");
  return v[0];
}

std::optional<std::vector<std::string>>
Hdf5File::stringListAttribute(const std::string &object,
                              const std::string &name) const {
  auto readOne = [&](const std::string &attr) {
    std::string what = "'" + escape_control_chars(attr) + "' of '" +
                       escape_control_chars(rooted(object)) + "'";
    Id a(H5Aopen_by_name(file_, rooted(object).c_str(), attr.c_str(),
                         H5P_DEFAULT, H5P_DEFAULT),
         H5Aclose);
    if (!a.valid())
      throw Hdf5Error("cannot open attribute " + what);
    return readStrings(a.get(), what);
  };
  if (hasAttribute(object, name))
    return readOne(name);
  // Keras splits a list over 64 KiB into "name0", "name1", ...
  // (save_attributes_to_hdf5_group).
  if (!hasAttribute(object, name + "0"))
    return std::nullopt;
  std::vector<std::string> all;
  for (int chunk = 0; hasAttribute(object, name + std::to_string(chunk));
       ++chunk) {
    std::vector<std::string> part = readOne(name + std::to_string(chunk));
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::vector<int64_t> Hdf5File::datasetShape(const std::string &path) const {
  Id d(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid())
    throw Hdf5Error("no dataset '" + escape_control_chars(path) + "'");
  Id space(H5Dget_space(d.get()), H5Sclose);
  if (!space.valid())
    throw Hdf5Error("dataset '" + escape_control_chars(path) +
                    "' has no dataspace");
  return dimsOf(space.get(), "dataset '" + escape_control_chars(path) + "'");
}

TensorValue Hdf5File::readDataset(const std::string &path) const {
  std::string what = "dataset '" + escape_control_chars(path) + "'";
  Id d(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid())
    throw Hdf5Error("no " + what);
  Id space(H5Dget_space(d.get()), H5Sclose);
  Id type(H5Dget_type(d.get()), H5Tclose);
  if (!space.valid() || !type.valid())
    throw Hdf5Error("cannot read " + what);
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL)
    throw Hdf5Error(what + " holds no value (null dataspace)");
  // Raw data in other files (external storage, virtual datasets) would
  // read the machine's files: only data inside this file is read.
  Id dcpl(H5Dget_create_plist(d.get()), H5Pclose);
  if (!dcpl.valid() || H5Pget_external_count(dcpl.get()) != 0 ||
      H5Pget_layout(dcpl.get()) == H5D_VIRTUAL)
    throw Hdf5Error(what + " keeps its data in other files, which estc does "
                           "not read");
  std::vector<int64_t> dims = dimsOf(space.get(), what);
  uint64_t count = checkedCount(dims, what);
  auto [dtype, mem] = memoryTypeFor(type.get());
  if (dtype == DType::Invalid)
    throw Hdf5Error(what + " has dtype " + typeName(type.get()) +
                    ", which estc cannot read (float16/32/64, int8-64, bool)");
  uint64_t bytes = count * dtype_size(dtype);
  if (bytes > fileBytes_ * 1024 + (1u << 20))
    throw Hdf5Error(what + ": shape " + shape_string(dims) + " needs " +
                    std::to_string(bytes) + " bytes, more than a file of " +
                    std::to_string(fileBytes_) + " bytes holds");
  TensorValue t;
  t.dtype = dtype;
  t.shape = dims;
  t.data.assign(static_cast<size_t>(count * dtype_size(dtype)), '\0');
  if (count > 0 && H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                           t.data.data()) < 0)
    throw Hdf5Error("cannot read " + what + " (corrupt or truncated file)");
  return t;
}

void Hdf5File::writeDataset(const std::string &path, const TensorValue &v) {
  std::string what = "dataset '" + escape_control_chars(path) + "'";
  Id d(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid())
    throw Hdf5Error("no " + what);
  Id space(H5Dget_space(d.get()), H5Sclose);
  std::vector<int64_t> dims = dimsOf(space.get(), what);
  if (dims != v.shape)
    throw Hdf5Error(what + " has shape " + shape_string(dims) +
                    ", the new value " + shape_string(v.shape));
  Id mem;
  if (v.dtype == DType::Bool) {
    Id type(H5Dget_type(d.get()), H5Tclose);
    if (memoryTypeFor(type.get()).first != DType::Bool)
      throw Hdf5Error(what + " is " + typeName(type.get()) +
                      ", the new value bool");
    mem = memoryTypeFor(type.get()).second;
  } else {
    mem = memoryTypeOf(v.dtype);
  }
  if (!mem.valid())
    throw Hdf5Error(what + ": cannot write a " + tf_name(v.dtype) +
                    " value into HDF5");
  if (static_cast<int64_t>(v.data.size()) !=
      v.num_elements() * static_cast<int64_t>(dtype_size(v.dtype)))
    throw Hdf5Error(what + ": the new value has " +
                    std::to_string(v.data.size()) + " bytes for shape " +
                    shape_string(v.shape));
  if (v.num_elements() > 0 && H5Dwrite(d.get(), mem.get(), H5S_ALL, H5S_ALL,
                                       H5P_DEFAULT, v.data.data()) < 0)
    throw Hdf5Error("cannot write " + what);
}

std::string Hdf5File::image() {
  if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0)
    throw Hdf5Error("cannot flush the HDF5 file");
  ssize_t n = H5Fget_file_image(file_, nullptr, 0);
  if (n < 0)
    throw Hdf5Error("cannot get the HDF5 file's image");
  std::string out(static_cast<size_t>(n), '\0');
  if (H5Fget_file_image(file_, out.data(), out.size()) != n)
    throw Hdf5Error("cannot get the HDF5 file's image");
  return out;
}

} // namespace keras
} // namespace estc
