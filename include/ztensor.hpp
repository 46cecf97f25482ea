/*
 * ztensor.hpp - a header-only C++20 wrapper over the C ABI of libztensor
 * (ztensor.h). It calls nothing but zt_* functions, so a program built with
 * it depends on the stable C ABI only, never on the library's C++ internals.
 *
 *   #include <ztensor.hpp>
 *
 *   ztensor::Reader file("model.zt");
 *   for (ztensor::Object obj : file)
 *     std::cout << obj.name() << " " << obj.format() << "\n";
 *   std::span<const float> w = file["w"].data().as<float>();   // zero-copy for raw data
 *
 *   ztensor::Writer out("out.zt");
 *   out.add_dense("w", std::span<const float>(values), {2, 3});
 *   out.finish();                                              // else the destructor aborts
 *
 * Namespace: `ztensor`, the name of the library. The library's internals use
 * `zt`, and a program may link both (a tool that uses the core statically and
 * this header in another file): class names such as zt::Reader would then
 * exist twice with different definitions, which breaks the one-definition
 * rule. Users who like the short name may write `namespace zt = ztensor;` in
 * their own files.
 *
 * Errors: every failing call throws ztensor::Error, which carries the
 * zt_status and the library's message (zt_last_error()).
 *
 * Lifetimes: Reader and Writer own their handle (move-only RAII). Object and
 * Component are light handles (a reader pointer and an index) and every
 * span or string_view they return points into memory owned by the Reader:
 * all of them are valid while the Reader that gave them is alive, like a
 * std::string_view of a std::string.
 */
#ifndef ZTENSOR_HPP
#define ZTENSOR_HPP

#include <ztensor.h>

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

namespace ztensor {

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */

/// The one exception type: a zt_status and the library's message.
class Error : public std::runtime_error {
 public:
  Error(zt_status status, const std::string& message)
      : std::runtime_error(std::string(zt_status_name(status)) + ": " + message),
        status_(status),
        message_(message) {}

  zt_status status() const noexcept { return status_; }
  /// The library's message alone, without the status name.
  const std::string& message() const noexcept { return message_; }

 private:
  zt_status status_;
  std::string message_;
};

namespace detail {

/// Throws the calling thread's last error if `s` is not ZT_OK. The message
/// is read at once: it is valid only until the next library call.
inline void check(zt_status s) {
  if (s != ZT_OK) throw Error(s, zt_last_error());
}

/// The C calls want NUL-terminated text; a string_view may not be. A NUL
/// inside the view would cut the text short at the C boundary (another
/// object, another name), so it is refused with ZT_ERR_ARGUMENT.
inline std::string c_str(std::string_view s) {
  if (const size_t nul = s.find('\0'); nul != std::string_view::npos) {
    std::string message = "embedded NUL byte in \"";
    message.append(s.substr(0, nul)).append("\\0...\"");
    throw Error(ZT_ERR_ARGUMENT, message);
  }
  return std::string(s);
}

/// `s.c_str()`, with the same NUL rule (a header "X: 1\0" would drop every
/// header after it; a role "data\0x" would read "data").
inline const char* checked_c_str(const std::string& s) {
  if (s.find('\0') != std::string::npos) (void)c_str(s);  // throws
  return s.c_str();
}

/// Memory for `n` elements the library is about to fill, not zeroed: a size
/// a file claims (a zstd component's uncompressed_length) costs nothing
/// until the library has decoded that many bytes, and a claim it refuses
/// leaves the pages untouched. Running out of memory is a ztensor::Error.
template <typename T>
std::unique_ptr<T[]> uninitialized(std::uint64_t n, const std::string& where) {
  try {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_alloc();
    return std::unique_ptr<T[]>(new T[static_cast<std::size_t>(n)]);
  } catch (const std::bad_alloc&) {
    throw Error(ZT_ERR_NOMEM, where + ": cannot allocate " + std::to_string(n) + " elements");
  }
}

/// The first `n` elements of `p` as a vector; a ztensor::Error if memory runs out.
template <typename T>
std::vector<T> to_vector(const T* p, std::uint64_t n, const std::string& where) {
  try {
    return std::vector<T>(p, p + n);
  } catch (const std::bad_alloc&) {
    throw Error(ZT_ERR_NOMEM, where + ": cannot allocate " + std::to_string(n) + " elements");
  }
}

/// A path for the C calls, with the same NUL rule; UTF-8 where the
/// system's paths are wide (Windows).
inline std::string path_str(const std::filesystem::path& p) {
  if constexpr (std::is_same_v<std::filesystem::path::value_type, char>) {
    return c_str(p.native());
  } else {
    const std::u8string u = p.u8string();
    return c_str(std::string(u.begin(), u.end()));
  }
}

/// A string the reader owns; NULL (an index or role that is not there) is
/// a library contract breach for the handles this header hands out.
inline std::string_view owned_text(const char* s, const char* what) {
  if (!s) throw Error(ZT_ERR_NOT_FOUND, std::string(what) + " is not available");
  return s;
}

}  // namespace detail

/// Bytes a program owns, for the library to decode into (Reader::read_many
/// hands them out): move-only, never initialised but by the decode that
/// fills them, freed with the last Bytes that holds their memory. From
/// 4 MiB the memory is an anonymous mapping of its own, its whole 2 MiB
/// pages advised for transparent huge pages where the system has them (a
/// hint: where it declines, nothing changes), so that the decode filling
/// it takes a page fault per 2 MiB instead of per 4 KiB: a program's first
/// load of a model spends most of its time in those faults otherwise.
/// Smaller ones come from `new`, but that read_many carves those of 4 KiB
/// and more out of shared blocks in huge pages (see there).
class Bytes {
 public:
  Bytes() = default;
  Bytes(Bytes&& o) noexcept
      : memory_(std::move(o.memory_)),
        p_(std::exchange(o.p_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        mapped_(std::exchange(o.mapped_, false)) {}
  Bytes& operator=(Bytes&& o) noexcept {
    memory_ = std::move(o.memory_);
    p_ = std::exchange(o.p_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, false);
    return *this;
  }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  ~Bytes() = default;

  /// `n` bytes, not initialised (fresh memory: a size costs nothing until
  /// written). Running out of memory is a ztensor::Error (ZT_ERR_NOMEM)
  /// whose message begins with `what`.
  static Bytes uninitialized(std::uint64_t n, std::string_view what = "bytes") {
    Bytes b;
    if (n == 0) return b;
    const auto refused = [&] {
      return Error(ZT_ERR_NOMEM,
                   std::string(what) + ": cannot allocate " + std::to_string(n) + " bytes");
    };
    if (n > std::numeric_limits<std::size_t>::max() - kPage) throw refused();
    const auto size = static_cast<std::size_t>(n);
    try {
      if (size >= kHugePagesFrom) b.memory_ = mapping(size);
      b.mapped_ = b.memory_ != nullptr;
      if (!b.memory_)
        b.memory_ =
            std::shared_ptr<std::byte>(new std::byte[size], std::default_delete<std::byte[]>());
    } catch (const std::bad_alloc&) {
      throw refused();
    }
    b.p_ = b.memory_.get();
    b.size_ = size;
    return b;
  }

  std::byte* data() noexcept { return p_; }
  const std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::span<std::byte> span() noexcept { return {p_, size_}; }
  std::span<const std::byte> span() const noexcept { return {p_, size_}; }
  /// Whether the memory lies in an anonymous mapping advised for huge pages
  /// (of its own from 4 MiB; a block read_many shares out), rather than
  /// memory from `new`.
  bool mapped() const noexcept { return mapped_; }

  /// Keeps the first min(n, size()) bytes (the memory stays as it is):
  /// what a decode wrote, where it wrote less than the room it was given.
  void truncate(std::size_t n) noexcept { size_ = std::min(size_, n); }

 private:
  friend class Reader;

  static constexpr std::size_t kPage = 4096;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kHugePagesFrom =
      2 * kHugePage;  // holds a whole one wherever it starts

  /// An anonymous mapping of `size` bytes, its whole 2 MiB pages advised
  /// for huge pages, unmapped when the last holder goes; null where the
  /// system has none or refuses it (then `new` is asked).
  static std::shared_ptr<std::byte> mapping(std::size_t size) {
#if defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
    const std::size_t length = (size + kPage - 1) / kPage * kPage;
    void* m = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(m);
    const std::uintptr_t start = (at + kHugePage - 1) / kHugePage * kHugePage;
    const std::uintptr_t end = (at + length) / kHugePage * kHugePage;
    if (end > start) (void)::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
    // The deleter unmaps it, also where the shared_ptr cannot be made.
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(m),
                                      [length](std::byte* p) { (void)::munmap(p, length); });
#else
    (void)size;
    return nullptr;
#endif
  }

  /// Bytes [offset, offset + n) of `block`, holding the whole block.
  static Bytes carve(const Bytes& block, std::size_t offset, std::size_t n) {
    Bytes b;
    b.memory_ = block.memory_;
    b.p_ = block.p_ + offset;
    b.size_ = n;
    b.mapped_ = block.mapped_;
    return b;
  }

  std::shared_ptr<std::byte> memory_;  // what frees it: its own, or a shared block
  std::byte* p_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;
};

/// The linked library's version, "MAJOR.MINOR.PATCH" (zt_version()).
inline std::string_view version() {
  return zt_version();
}

/// How many threads "all cores" (threads = 0) means in the library's calls:
/// the CPUs this process may run on, bounded by its cgroup's CPU quota
/// (zt_cpu_count()).
inline unsigned cpu_count() {
  return zt_cpu_count();
}

/* ------------------------------------------------------------------------ */
/* Element types                                                              */

/// The dtype text of a C++ element type ("f32" for float, ...), or "" if
/// the type has no fixed dtype.
template <typename T>
constexpr std::string_view dtype_name() {
  using std::is_same_v;
  if constexpr (is_same_v<T, double>)
    return "f64";
  else if constexpr (is_same_v<T, float>)
    return "f32";
  else if constexpr (is_same_v<T, std::int64_t>)
    return "i64";
  else if constexpr (is_same_v<T, std::int32_t>)
    return "i32";
  else if constexpr (is_same_v<T, std::int16_t>)
    return "i16";
  else if constexpr (is_same_v<T, std::int8_t>)
    return "i8";
  else if constexpr (is_same_v<T, std::uint64_t>)
    return "u64";
  else if constexpr (is_same_v<T, std::uint32_t>)
    return "u32";
  else if constexpr (is_same_v<T, std::uint16_t>)
    return "u16";
  else if constexpr (is_same_v<T, std::uint8_t>)
    return "u8";
  else
    return {};
}

/// Element types with a fixed dtype. bool is left out on purpose: a stored
/// byte other than 0 or 1 read as a C++ bool is undefined behaviour, so bool
/// components are read as std::uint8_t. f16, bf16 and FP8 have no C++20
/// type: read their bits via bytes() (FP8 as std::uint8_t, its dtype), or
/// converted by the library (read_f32, decode_f32).
template <typename T>
concept Element = (!dtype_name<T>().empty());

/// Interleaved complex numbers: dtype f32/f64 with type complex64/complex128.
template <typename T>
concept ComplexElement =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

/// What typed reads accept: an Element or a ComplexElement.
template <typename T>
concept Readable = Element<T> || ComplexElement<T>;

/* ------------------------------------------------------------------------ */
/* Shapes                                                                     */

/// A shape argument: a span, a vector or a braced list `{2, 3}`. A span or
/// vector is referred to, for the duration of the call; a braced list is
/// copied (its array lives only as long as the expression that wrote it,
/// and a Shape may be kept: `ztensor::Shape s{2, 3}; w.add_dense("w", v, s);`).
class Shape {
 public:
  Shape(std::span<const std::uint64_t> dims) : dims_(dims) {}
  Shape(const std::vector<std::uint64_t>& dims) : dims_(dims) {}
  Shape(std::initializer_list<std::uint64_t> dims) : owned_(dims), owns_(true) {}

  const std::uint64_t* data() const { return owns_ ? owned_.data() : dims_.data(); }
  std::size_t size() const { return owns_ ? owned_.size() : dims_.size(); }

 private:
  std::span<const std::uint64_t> dims_;
  std::vector<std::uint64_t> owned_;
  bool owns_ = false;
};

/* ------------------------------------------------------------------------ */
/* Reading                                                                    */

/// Index-based iteration over the objects of a reader or the components of
/// an object, yielding handles by value. A range holds a copy of an owner
/// that is a cheap handle (Object), so `for (Component c :
/// file["w"].components())` iterates a range that owns what it points into;
/// a Reader, which cannot be copied, is held by address, and its ranges
/// cannot be taken from a temporary Reader (those overloads are deleted).
class Reader;

template <typename Owner, typename Item>
class IndexRange {
  // Decided by name, not by a trait: Reader is incomplete where its own
  // ranges are declared.
  using Holder = std::conditional_t<std::is_same_v<Owner, Reader>, const Owner*, Owner>;

 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Item;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Item;

    iterator() = default;
    iterator(Holder owner, std::size_t i) : owner_(std::move(owner)), i_(i) {}
    Item operator*() const { return deref(*owner_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    // The iterator holds what its range holds (a copy of an Object handle,
    // a Reader's address), so that it stays valid after a temporary range
    // is gone: `auto it = file["w"].components().begin();`.
    std::optional<Holder> owner_;
    std::size_t i_ = 0;
  };

  explicit IndexRange(const Owner* owner) : owner_(hold(owner)) {}
  iterator begin() const { return {owner_, 0}; }
  iterator end() const { return {owner_, owner().size()}; }
  std::size_t size() const { return owner().size(); }

 private:
  static Holder hold(const Owner* o) {
    if constexpr (std::is_pointer_v<Holder>)
      return o;
    else
      return *o;
  }
  static const Owner& deref(const Holder& h) {
    if constexpr (std::is_pointer_v<Holder>)
      return *h;
    else
      return h;
  }
  const Owner& owner() const { return deref(owner_); }

  Holder owner_;
};

/// Byte width of a storage dtype ("f32" -> 4); throws ZT_ERR_UNSUPPORTED
/// for a name that is not one of the 13 primitives.
inline std::size_t dtype_width(std::string_view dtype) {
  if (dtype == "f64" || dtype == "i64" || dtype == "u64") return 8;
  if (dtype == "f32" || dtype == "i32" || dtype == "u32") return 4;
  if (dtype == "f16" || dtype == "bf16" || dtype == "i16" || dtype == "u16") return 2;
  if (dtype == "i8" || dtype == "u8" || dtype == "bool") return 1;
  throw Error(ZT_ERR_UNSUPPORTED, "\"" + std::string(dtype) + "\" is not a storage dtype");
}

/// True for the logical types stored as two numbers per element.
inline bool is_complex_type(std::optional<std::string_view> type) {
  return type == "complex64" || type == "complex128";
}

/// Storage elements of one dtype (and logical type) in memory the reader
/// owns: what components, views and row slices hand out.
class ArrayView {
 public:
  ArrayView() = default;
  /// `count` storage elements of `dtype` at `data`; `where` names the array
  /// in error messages (`object "w": component "data"`).
  ArrayView(const void* data, std::uint64_t count, std::string_view dtype,
            std::optional<std::string_view> type, std::string where)
      : data_(data), count_(count), dtype_(dtype), type_(type), where_(std::move(where)) {}

  /// Storage elements (two per complex element).
  std::uint64_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  std::string_view dtype() const { return dtype_; }
  std::optional<std::string_view> type() const { return type_; }
  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(data_),
            static_cast<std::size_t>(count_ * (dtype_.empty() ? 1 : dtype_width(dtype_)))};
  }

  /// The elements as T, with T matching the storage dtype exactly (float for
  /// "f32"; std::uint8_t also for "bool"), or std::complex<float>/<double>
  /// for complex64/complex128. Throws ZT_ERR_ARGUMENT on a mismatch.
  template <Readable T>
  std::span<const T> as() const {
    check_element<T>();
    const std::span<const std::byte> b = bytes();
    if (reinterpret_cast<std::uintptr_t>(b.data()) % alignof(T) != 0)
      throw Error(ZT_ERR_ARGUMENT, where_ + ": data is not aligned for " + element_name<T>());
    return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
  }

  /// A copy of the elements as T (same rules as as<T>, any alignment).
  template <Readable T>
  std::vector<T> to_vector() const {
    check_element<T>();
    const std::span<const std::byte> b = bytes();
    std::vector<T> out(b.size() / sizeof(T));
    if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
    return out;
  }

 private:
  template <typename T>
  static std::string element_name() {
    if constexpr (std::is_same_v<T, std::complex<float>>)
      return "complex64";
    else if constexpr (std::is_same_v<T, std::complex<double>>)
      return "complex128";
    else
      return std::string(dtype_name<T>());
  }

  std::string describe() const {
    std::string d(dtype_);
    if (type_) d += " with type " + std::string(*type_);
    return d;
  }

  template <typename T>
  void check_element() const {
    bool ok = false;
    if constexpr (ComplexElement<T>) {
      constexpr bool single = std::is_same_v<T, std::complex<float>>;
      ok = dtype_ == (single ? "f32" : "f64") && type_ == (single ? "complex64" : "complex128");
    } else {
      ok = dtype_ == dtype_name<T>() || (std::is_same_v<T, std::uint8_t> && dtype_ == "bool");
    }
    if (!ok)
      throw Error(ZT_ERR_ARGUMENT,
                  where_ + ": asked for " + element_name<T>() + " but it is " + describe());
  }

  const void* data_ = nullptr;
  std::uint64_t count_ = 0;
  std::string_view dtype_;
  std::optional<std::string_view> type_;
  std::string where_;
};

namespace detail {

inline std::optional<std::string_view> opt_text(const char* s) {
  return s ? std::optional<std::string_view>(s) : std::nullopt;
}

/// An ArrayView of `elements` logical elements: doubled for complex, halved
/// (rounded up) for f4_e2m1, which packs two values a byte.
inline ArrayView array(const void* data, std::uint64_t elements, const char* dtype,
                       const char* type, std::string where) {
  const std::optional<std::string_view> t = opt_text(type);
  const std::uint64_t count = is_complex_type(t)     ? elements * 2
                              : t && *t == "f4_e2m1" ? (elements + 1) / 2
                                                     : elements;
  return ArrayView(data, count, owned_text(dtype, "dtype"), opt_text(type), std::move(where));
}

}  // namespace detail

/// A dense object at a glance (zt_dense_view).
struct DenseView {
  bool zero_copy = false;      ///< data points into the file mapping (else the decode cache)
  std::uint64_t elements = 0;  ///< product(shape)
  std::span<const std::uint64_t> shape;
  ArrayView data;  ///< elements (x 2 storage elements for complex)
};

/// A sparse_csr object: row i holds values[indptr[i] .. indptr[i+1]) at
/// columns indices[...]. The structure was checked when the view was made.
struct CsrView {
  bool zero_copy = false;
  std::uint64_t rows = 0, cols = 0, nnz = 0;
  ArrayView values;   ///< nnz elements
  ArrayView indices;  ///< nnz column indices ("u64" in 1.2.0 files)
  ArrayView indptr;   ///< rows + 1 row pointers
};

/// A sparse_coo object: entry k sits at (coords[0 * nnz + k], ...,
/// coords[(ndim - 1) * nnz + k]). Checked when the view was made.
struct CooView {
  bool zero_copy = false;
  std::span<const std::uint64_t> shape;
  std::uint64_t nnz = 0;
  ArrayView values;  ///< nnz elements
  ArrayView coords;  ///< ndim x nnz indices, all of dimension 0 first

  /// The coordinates along one dimension (u64 coords, as 1.2.0 files have).
  std::span<const std::uint64_t> coords_of(std::size_t dim) const {
    if (dim >= shape.size())
      throw Error(ZT_ERR_ARGUMENT, "dimension " + std::to_string(dim) + " of a rank-" +
                                       std::to_string(shape.size()) + " object");
    return coords.as<std::uint64_t>().subspan(dim * nnz, nnz);
  }
};

/// A quantized_group object (see zt_quant_view in ztensor.h for the layout).
struct QuantView {
  std::uint32_t bits = 0;
  std::uint64_t group_size = 0;
  std::uint64_t n = 0;                ///< output dimension: product of all but the last dimension
  std::uint64_t k = 0;                ///< input dimension: the last one
  std::uint64_t groups = 0;           ///< ceil(k / group_size)
  std::uint32_t values_per_word = 0;  ///< 0 for "bitstream"
  bool bitstream = false;
  bool zeros_packed = false;
  bool zero_copy = false;
  ArrayView packed_weight, scales, zeros;
};

/// One component of an object: a light handle, valid while its Reader lives.
class Component {
 public:
  /// `role` must be the reader's own text (zt_component_role); handles come
  /// from Object, which guarantees that.
  Component(const zt_reader* r, std::size_t object, const char* role)
      : r_(r), object_(object), role_(role) {}

  std::string_view role() const { return role_; }
  /// Storage dtype: "f32", "u8", ...
  std::string_view dtype() const {
    return detail::owned_text(zt_component_dtype(r_, object_, role_), "component dtype");
  }
  /// Logical type ("f8_e4m3fn", "complex64", ...) if the file states one.
  std::optional<std::string_view> type() const {
    return detail::opt_text(zt_component_type(r_, object_, role_));
  }
  /// "raw", "zstd", or whatever the file says.
  std::string_view encoding() const {
    return detail::owned_text(zt_component_encoding(r_, object_, role_), "component encoding");
  }
  /// A v2 part's encoding id as written ("zt.zstd-seekable/1"); none if raw.
  std::optional<std::string_view> encoding_id() const {
    return detail::opt_text(zt_component_encoding_id(r_, object_, role_));
  }
  /// The v2 shard holding the bytes; none when they are in this file.
  std::optional<std::string_view> shard() const {
    return detail::opt_text(zt_component_shard(r_, object_, role_));
  }
  /// Bytes on disk (the compressed size for zstd).
  std::uint64_t stored_size() const {
    std::uint64_t n = 0;
    detail::check(zt_component_stored_size(r_, object_, role_, &n));
    return n;
  }
  /// Where the stored bytes lie in what the reader was opened on (a file,
  /// a buffer, a URL's resource): for reading or mapping them oneself.
  struct Extent {
    std::uint64_t offset = 0;
    std::uint64_t nbytes = 0;
  };
  /// None when they are in another file (a v2 shard, an input file of a
  /// foreign model).
  std::optional<Extent> extent() const {
    Extent e;
    const zt_status s = zt_component_extent(r_, object_, role_, &e.offset, &e.nbytes);
    if (s == ZT_ERR_UNSUPPORTED) return std::nullopt;
    detail::check(s);
    return e;
  }
  /// Decoded byte count, if known without decoding.
  std::optional<std::uint64_t> decoded_size() const {
    std::uint64_t n = 0;
    const zt_status s = zt_component_decoded_size(r_, object_, role_, &n);
    if (s == ZT_ERR_UNSUPPORTED) return std::nullopt;
    detail::check(s);
    return n;
  }

  /// The decoded little-endian bytes: a view of the mapping for raw data,
  /// else decoded once and cached by the reader.
  std::span<const std::byte> bytes() const {
    const void* data = nullptr;
    std::uint64_t n = 0;
    detail::check(zt_component_map(r_, object_, role_, &data, &n));
    return {static_cast<const std::byte*>(data), static_cast<std::size_t>(n)};
  }

  /// The decoded elements as an ArrayView (same memory as bytes()).
  ArrayView elements() const {
    const std::span<const std::byte> b = bytes();
    const std::string_view dt = dtype();
    return ArrayView(b.data(), b.size() / dtype_width(dt), dt, type(), where());
  }

  /// The elements, with T matching the dtype exactly (float for "f32";
  /// std::uint8_t also for "bool"), or std::complex<float>/<double> for
  /// complex64/complex128 data. Zero-copy for raw data.
  template <Readable T>
  std::span<const T> as() const {
    return elements().as<T>();
  }

  /// Decodes into `dst` without caching; returns the byte count written.
  std::uint64_t read_into(std::span<std::byte> dst) const {
    std::uint64_t written = 0;
    detail::check(zt_component_read(r_, object_, role_, dst.data(), dst.size(), &written));
    return written;
  }

  /// A decoded copy of the bytes, without caching in the reader.
  std::vector<std::byte> read_bytes() const {
    const std::uint64_t n = decoded_size_or_decode();
    const auto buf = detail::uninitialized<std::byte>(n, where());
    const std::uint64_t written = read_into({buf.get(), static_cast<std::size_t>(n)});
    return detail::to_vector(buf.get(), written, where());
  }

  /// A decoded copy of the elements as T (rules of as<T>), without caching.
  template <Readable T>
  std::vector<T> read_as() const {
    const std::vector<std::byte> raw = read_bytes();
    const std::string_view dt = dtype();
    return ArrayView(raw.data(), raw.size() / dtype_width(dt), dt, type(), where()).to_vector<T>();
  }

  /// Every stored number converted to float / double, whatever the dtype
  /// (integers, bool, f16, bf16, FP8; two values per complex element).
  std::vector<float> read_f32() const { return convert<float>(&zt_component_read_f32); }
  std::vector<double> read_f64() const { return convert<double>(&zt_component_read_f64); }

  /// Page-cache hints for the stored bytes (no-ops where they mean nothing).
  void prefetch() const { detail::check(zt_prefetch(r_, object_, role_)); }
  void evict() const { detail::check(zt_evict(r_, object_, role_)); }

  const zt_reader* reader_handle() const { return r_; }
  std::size_t object_index() const { return object_; }

 private:
  template <typename F>
  using ReadFn = zt_status (*)(const zt_reader*, std::size_t, const char*, F*, std::uint64_t,
                               std::uint64_t*);

  template <typename F>
  std::vector<F> convert(ReadFn<F> read) const {
    std::uint64_t n = decoded_size_or_decode() / dtype_width(dtype());
    if (type() == "f4_e2m1") n *= 2;  // two values a byte
    const auto buf = detail::uninitialized<F>(n, where());
    std::uint64_t written = 0;
    detail::check(read(r_, object_, role_, buf.get(), n, &written));
    return detail::to_vector(buf.get(), written, where());
  }

  std::string where() const {
    const char* name = zt_object_name(r_, object_);
    return std::string("object \"") + (name ? name : "?") + "\": component \"" +
           std::string(role_) + "\"";
  }

  // The capacity a read needs, checked as the read checks it (the
  // reader's max_decoded_bytes: a claim over it is refused with the read's
  // own status, not by the allocator); for the rare component whose size is
  // not stated (a foreign encoding), the cached decode tells it.
  std::uint64_t decoded_size_or_decode() const {
    std::uint64_t n = 0;
    const zt_status s = zt_component_read_size(r_, object_, role_, &n);
    if (s == ZT_ERR_UNSUPPORTED) return bytes().size();
    detail::check(s);
    return n;
  }

  const zt_reader* r_;
  std::size_t object_;
  const char* role_;  // owned by the reader, like every string it hands out
};

/// One named object: a light handle, valid while its Reader lives.
class Object {
 public:
  Object(const zt_reader* r, std::size_t index) : r_(r), index_(index) {}

  std::size_t index() const { return index_; }
  std::string_view name() const {
    return detail::owned_text(zt_object_name(r_, index_), "object name");
  }
  /// "dense", "sparse_csr", "sparse_coo", "quantized_group", or the file's text.
  std::string_view format() const {
    return detail::owned_text(zt_object_format(r_, index_), "object format");
  }
  /// The layout as written: a v2 id ("zt.sparse_csr/1"), or the 1.x format.
  std::string_view layout() const {
    return detail::owned_text(zt_object_layout(r_, index_), "object layout");
  }
  std::span<const std::uint64_t> shape() const {
    std::size_t ndim = 0;
    const std::uint64_t* dims = zt_object_shape(r_, index_, &ndim);
    return {dims, ndim};
  }
  /// The object's attributes as one encoded CBOR map, exactly as stored
  /// (empty when it has none); valid while the reader lives.
  std::span<const std::byte> attributes_cbor() const {
    const void* data = nullptr;
    std::size_t size = 0;
    detail::check(zt_object_attributes_cbor(r_, index_, &data, &size));
    return {static_cast<const std::byte*>(data), size};
  }
  /// product(shape), 1 for a scalar; ZT_ERR_LIMIT if it overflows 64 bits.
  std::uint64_t element_count() const {
    std::uint64_t n = 0;
    detail::check(zt_object_element_count(r_, index_, &n));
    return n;
  }
  /// Values that read_f32 / decode_f32 give: element_count, x 2 for complex.
  std::uint64_t value_count() const {
    std::uint64_t n = 0;
    detail::check(zt_object_value_count(r_, index_, &n));
    return n;
  }

  /// Components in manifest order.
  std::size_t size() const { return zt_component_count(r_, index_); }
  Component operator[](std::size_t k) const {
    return {r_, index_, detail::owned_text(zt_component_role(r_, index_, k), "component").data()};
  }
  IndexRange<Object, Component> components() const { return IndexRange<Object, Component>(this); }

  /// The component with this role, or nullopt.
  std::optional<Component> find(std::string_view role) const {
    for (std::size_t k = 0; k < size(); ++k)
      if (zt_component_role(r_, index_, k) == role) return (*this)[k];
    return std::nullopt;
  }
  /// The component with this role; throws ZT_ERR_NOT_FOUND if there is none.
  Component component(std::string_view role) const {
    if (auto c = find(role)) return *c;
    throw Error(ZT_ERR_NOT_FOUND, "object \"" + std::string(name()) + "\" has no component \"" +
                                      std::string(role) + "\"");
  }
  /// The "data" component of a dense object.
  Component data() const { return component("data"); }

  /* -- typed views -- */

  /// A dense object's data, any numeric type converted (no caching).
  std::vector<float> read_f32() const { return read_dense<float>(&zt_object_read_f32); }
  std::vector<double> read_f64() const { return read_dense<double>(&zt_object_read_f64); }

  /// Any object as a dense row-major array: dense converted, sparse
  /// scattered into zeros, quantized_group dequantised.
  std::vector<float> decode_f32() const { return convert<float>(&zt_object_decode_f32); }
  std::vector<double> decode_f64() const { return convert<double>(&zt_object_decode_f64); }

  DenseView dense() const {
    zt_dense_info v;
    zt_dense_info_init(&v);
    detail::check(zt_dense_view(r_, index_, &v));
    // Sized by the storage elements the library counted in the bytes
    // (v.values), never by the shape: for a logical type the library does
    // not know, the shape is not checked against the bytes.
    return {v.zero_copy != 0, v.elements, shape(),
            ArrayView(v.data, v.values, detail::owned_text(v.dtype, "dtype"),
                      detail::opt_text(v.type), where("data"))};
  }

  CsrView csr() const {
    zt_csr_info v;
    zt_csr_info_init(&v);
    detail::check(zt_csr_view(r_, index_, &v));
    return {v.zero_copy != 0,
            v.rows,
            v.cols,
            v.nnz,
            detail::array(v.values, v.nnz, v.values_dtype, v.values_type, where("values")),
            detail::array(v.indices, v.nnz, v.indices_dtype, nullptr, where("indices")),
            detail::array(v.indptr, v.rows + 1, v.indptr_dtype, nullptr, where("indptr"))};
  }

  CooView coo() const {
    zt_coo_info v;
    zt_coo_info_init(&v);
    detail::check(zt_coo_view(r_, index_, &v));
    return {v.zero_copy != 0,
            {v.shape, static_cast<std::size_t>(v.ndim)},
            v.nnz,
            detail::array(v.values, v.nnz, v.values_dtype, v.values_type, where("values")),
            detail::array(v.coords, v.ndim * v.nnz, v.coords_dtype, nullptr, where("coords"))};
  }

  QuantView quant() const {
    zt_quant_info v;
    zt_quant_info_init(&v);
    detail::check(zt_quant_view(r_, index_, &v));
    QuantView q;
    q.bits = v.bits;
    q.group_size = v.group_size;
    q.n = v.n;
    q.k = v.k;
    q.groups = v.groups;
    q.values_per_word = v.values_per_word;
    q.bitstream = v.bitstream != 0;
    q.zeros_packed = v.zeros_packed != 0;
    q.zero_copy = v.zero_copy != 0;
    q.packed_weight = detail::array(v.packed_weight, v.packed_weight_count, v.packed_weight_dtype,
                                    nullptr, where("packed_weight"));
    q.scales = detail::array(v.scales, v.scales_count, v.scales_dtype, nullptr, where("scales"));
    q.zeros = detail::array(v.zeros, v.zeros_count, v.zeros_dtype, v.zeros_type, where("zeros"));
    return q;
  }

  /* -- row slices of dense objects: rows [begin, end) of the first dimension -- */

  /// Zero-copy for raw data (else the whole component is decoded into the cache).
  ArrayView rows(std::uint64_t begin, std::uint64_t end) const {
    const void* data = nullptr;
    std::uint64_t nbytes = 0;
    detail::check(zt_dense_rows_map(r_, index_, begin, end, &data, &nbytes));
    const Component d = this->data();
    const std::string_view dt = d.dtype();
    return ArrayView(data, nbytes / dtype_width(dt), dt, d.type(), where("data"));
  }

  /// A copy of the rows, decoding only the zstd frames that cover them.
  std::vector<std::byte> read_rows(std::uint64_t begin, std::uint64_t end) const {
    const RowSize size = row_size(begin, end);
    const std::uint64_t n = size.values * size.width;
    const auto buf = detail::uninitialized<std::byte>(n, where("data"));
    std::uint64_t written = 0;
    detail::check(zt_dense_rows(r_, index_, begin, end, buf.get(), n, &written));
    return detail::to_vector(buf.get(), written, where("data"));
  }

  /// The rows converted to float / double.
  std::vector<float> rows_f32(std::uint64_t begin, std::uint64_t end) const {
    return convert_rows<float>(&zt_dense_rows_f32, begin, end);
  }
  std::vector<double> rows_f64(std::uint64_t begin, std::uint64_t end) const {
    return convert_rows<double>(&zt_dense_rows_f64, begin, end);
  }

  /* -- N-d slices of dense objects: the box [begin[d], end[d]) in every dimension -- */

  /// A copy of the box, row-major, touching only its bytes (zt_dense_slice).
  std::vector<std::byte> read_slice(std::span<const std::uint64_t> begin,
                                    std::span<const std::uint64_t> end) const {
    same_rank(begin, end);
    const RowSize size = box_size(begin, end);
    const std::uint64_t n = size.values * size.width;
    const auto buf = detail::uninitialized<std::byte>(n, where("data"));
    std::uint64_t written = 0;
    detail::check(
        zt_dense_slice(r_, index_, begin.size(), begin.data(), end.data(), buf.get(), n, &written));
    return detail::to_vector(buf.get(), written, where("data"));
  }

  /// The box converted to float / double.
  std::vector<float> slice_f32(std::span<const std::uint64_t> begin,
                               std::span<const std::uint64_t> end) const {
    return convert_slice<float>(&zt_dense_slice_f32, begin, end);
  }
  std::vector<double> slice_f64(std::span<const std::uint64_t> begin,
                                std::span<const std::uint64_t> end) const {
    return convert_slice<double>(&zt_dense_slice_f64, begin, end);
  }

 private:
  struct RowSize {
    std::uint64_t values = 0;  // storage elements (x 2 for complex)
    std::size_t width = 1;     // bytes per storage element
  };

  template <typename F>
  using SliceFn = zt_status (*)(const zt_reader*, std::size_t, std::size_t, const std::uint64_t*,
                                const std::uint64_t*, F*, std::uint64_t, std::uint64_t*);

  // The library reads begin.size() entries of both: a shorter end would be
  // read past.
  static void same_rank(std::span<const std::uint64_t> begin, std::span<const std::uint64_t> end) {
    if (begin.size() != end.size())
      throw Error(ZT_ERR_ARGUMENT, "a box of " + std::to_string(begin.size()) + " begins and " +
                                       std::to_string(end.size()) + " ends");
  }

  template <typename F>
  std::vector<F> convert_slice(SliceFn<F> read, std::span<const std::uint64_t> begin,
                               std::span<const std::uint64_t> end) const {
    same_rank(begin, end);
    const std::uint64_t n = box_size(begin, end).values;
    const auto buf = detail::uninitialized<F>(n, where("data"));
    std::uint64_t written = 0;
    detail::check(read(r_, index_, begin.size(), begin.data(), end.data(), buf.get(), n, &written));
    return detail::to_vector(buf.get(), written, where("data"));
  }

  // The size of a box, 0 for what the library will refuse (as row_size).
  RowSize box_size(std::span<const std::uint64_t> begin, std::span<const std::uint64_t> end) const {
    const std::optional<Component> d = find("data");
    const std::span<const std::uint64_t> s = shape();
    if (!d || format() != "dense" || begin.size() != s.size() || end.size() != s.size()) return {};
    std::uint64_t values = is_complex_type(d->type()) ? 2 : 1;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (begin[k] > end[k] || end[k] > s[k]) return {};
      values *= end[k] - begin[k];
    }
    return {values, dtype_width(d->dtype())};
  }

  template <typename F>
  using ReadFn = zt_status (*)(const zt_reader*, std::size_t, F*, std::uint64_t, std::uint64_t*);
  template <typename F>
  using RowsFn = zt_status (*)(const zt_reader*, std::size_t, std::uint64_t, std::uint64_t, F*,
                               std::uint64_t, std::uint64_t*);

  // read_f32/f64: what the library refuses (an object that is not dense,
  // data over the reader's max_decoded_bytes) is refused with its own
  // status before anything is sized from the shape.
  template <typename F>
  std::vector<F> read_dense(ReadFn<F> read) const {
    if (format() != "dense") {
      std::uint64_t written = 0;
      detail::check(read(r_, index_, nullptr, 0, &written));
      return {};
    }
    std::uint64_t bytes = 0;
    if (const zt_status s = zt_component_read_size(r_, index_, "data", &bytes);
        s != ZT_ERR_UNSUPPORTED)
      detail::check(s);
    return convert(read);
  }

  template <typename F>
  std::vector<F> convert(ReadFn<F> read) const {
    std::uint64_t n = 0;  // checked against the reader's cap as the call checks it
    detail::check(zt_object_decode_capacity(r_, index_, sizeof(F), &n));
    const std::string where = std::string("object \"") + std::string(name()) + "\"";
    const auto buf = detail::uninitialized<F>(n, where);
    std::uint64_t written = 0;
    detail::check(read(r_, index_, buf.get(), n, &written));
    return detail::to_vector(buf.get(), written, where);
  }

  template <typename F>
  std::vector<F> convert_rows(RowsFn<F> read, std::uint64_t begin, std::uint64_t end) const {
    const std::uint64_t n = row_size(begin, end).values;
    const auto buf = detail::uninitialized<F>(n, where("data"));
    std::uint64_t written = 0;
    detail::check(read(r_, index_, begin, end, buf.get(), n, &written));
    return detail::to_vector(buf.get(), written, where("data"));
  }

  // The size of rows [begin, end). What the library will refuse (a bad
  // range, an object that is not dense) gives 0, so that the library's own
  // error is the one reported.
  RowSize row_size(std::uint64_t begin, std::uint64_t end) const {
    const std::optional<Component> d = find("data");
    const std::span<const std::uint64_t> s = shape();
    if (!d || format() != "dense" || s.empty() || begin > end || end > s[0]) return {};
    std::uint64_t per_row = is_complex_type(d->type()) ? 2 : 1;
    for (std::size_t k = 1; k < s.size(); ++k) per_row *= s[k];
    return {(end - begin) * per_row, dtype_width(d->dtype())};
  }

  std::string where(const char* role) const {
    return "object \"" + std::string(name()) + "\": component \"" + role + "\"";
  }

  const zt_reader* r_;
  std::size_t index_;
};

/// Counts returned by Reader::verify.
struct VerifyResult {
  std::uint64_t checked = 0;    ///< components whose digest matched
  std::uint64_t unchecked = 0;  ///< components without a digest of a known algorithm
};

enum class IoMode : std::uint32_t {
  map = ZT_IO_MAP,   ///< memory-map the file: zero-copy raw components
  copy = ZT_IO_COPY  ///< pread into owned buffers: for files that may change while open
};

struct OpenOptions {
  IoMode io_mode = IoMode::map;
  std::uint64_t max_decoded_bytes = 0;  ///< cap on one component's decoded size; 0 = default
  /// Also read .safetensors, .gguf, .npy, .npz, PyTorch, .onnx and sharded-index
  /// files, read-only (zt_open_options.allow_foreign).
  bool allow_foreign = false;
};

/// Options of Reader::from_url (zt_open_url; docs/remote.md).
struct HttpOptions {
  std::vector<std::string> headers;     ///< "Name: value" lines sent with every request
  std::uint32_t timeout_ms = 30000;     ///< connect timeout and longest stall
  std::uint32_t retries = 3;            ///< after a 5xx, 429 or dropped connection
  std::uint32_t connections = 4;        ///< requests in flight at once
  std::uint64_t cache_bytes = 0;        ///< fetched ranges kept; 0 = 64 MiB
  std::uint64_t max_decoded_bytes = 0;  ///< as OpenOptions
  /// Also read .safetensors URLs and sharded safetensors .index.json URLs
  /// (zt_open_options.allow_foreign); other foreign formats are refused.
  bool allow_foreign = false;
};

/// A file behind your own transport, for Reader::from_source: an object
/// store's SDK, an encrypted blob, a cache. Called from any thread, several
/// at once (the library does not serialise them); an exception thrown by
/// read_at or size fails the call that needed the bytes with ZT_ERR_IO.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// The file's size in bytes (asked once, at open).
  virtual std::uint64_t size() = 0;
  /// Reads up to out.size() bytes at `offset` into out and returns how
  /// many (fewer is a short read; 0 means the data ended early).
  virtual std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) = 0;
  /// What messages call the source.
  virtual std::string name() const { return "source"; }
  /// Whether read_at may run on several threads at once (the default);
  /// false: the library calls it from one thread at a time
  /// (ZT_SOURCE_CONCURRENT unset), for a source that is not thread-safe.
  virtual bool concurrent() const { return true; }
};

/// An open .zt file (move-only; closes the file on destruction).
class Reader {
 public:
  /// Opens and validates a file; throws Error on failure.
  explicit Reader(const std::filesystem::path& path, const OpenOptions& options = {}) {
    zt_open_options o;
    zt_open_options_init(&o);
    o.io_mode = static_cast<std::uint32_t>(options.io_mode);
    o.max_decoded_bytes = options.max_decoded_bytes;
    o.allow_foreign = options.allow_foreign ? 1 : 0;
    detail::check(zt_open_ex(detail::path_str(path).c_str(), &o, &r_));
  }

  /// Reads a file held in memory that the caller keeps alive and unchanged
  /// for the life of the Reader.
  static Reader from_memory(std::span<const std::byte> bytes) {
    zt_reader* r = nullptr;
    detail::check(zt_open_memory(bytes.data(), bytes.size(), &r));
    return Reader(r);
  }

  /// Opens an http:// or https:// URL with range requests (zt_open_url):
  /// two requests to open, then only the ranges that calls read. Nothing is
  /// mapped: views point into buffers the Reader owns.
  static Reader from_url(const std::string& url, const HttpOptions& http = {}) {
    std::string headers;
    for (const std::string& h : http.headers) headers.append(detail::checked_c_str(h)).append("\n");
    zt_open_options o;
    zt_open_options_init(&o);
    o.max_decoded_bytes = http.max_decoded_bytes;
    o.cache_bytes = http.cache_bytes;
    o.http_headers = headers.empty() ? nullptr : headers.c_str();
    o.http_timeout_ms = http.timeout_ms;
    o.http_retries = http.retries;
    o.http_connections = http.connections;
    o.allow_foreign = http.allow_foreign ? 1 : 0;
    zt_reader* r = nullptr;
    detail::check(zt_open_url(detail::checked_c_str(url), &o, &r));
    return Reader(r);
  }

  /// Opens a file read through `source` (zt_open_source), which the
  /// Reader keeps until it closes.
  static Reader from_source(std::unique_ptr<ByteSource> source, std::uint64_t cache_bytes = 0) {
    if (!source) throw Error(ZT_ERR_ARGUMENT, "source is null");
    struct Held {
      std::unique_ptr<ByteSource> source;
      std::string name;
    };
    auto held = std::make_unique<Held>(Held{std::move(source), {}});
    held->name = held->source->name();
    zt_source s;
    zt_source_init(&s);
    s.flags = held->source->concurrent() ? std::uint32_t{ZT_SOURCE_CONCURRENT} : 0u;
    s.ctx = held.get();
    s.name = held->name.c_str();
    s.read_at = [](void* ctx, std::uint64_t off, std::size_t len, void* buf,
                   std::size_t* done) noexcept -> zt_status {
      try {
        *done = static_cast<Held*>(ctx)->source->read_at(
            off, std::span<std::byte>(static_cast<std::byte*>(buf), len));
        return ZT_OK;
      } catch (...) {
        return ZT_ERR_IO;
      }
    };
    s.size = [](void* ctx, std::uint64_t* out) noexcept -> zt_status {
      try {
        *out = static_cast<Held*>(ctx)->source->size();
        return ZT_OK;
      } catch (...) {
        return ZT_ERR_IO;
      }
    };
    s.close = [](void* ctx) noexcept { delete static_cast<Held*>(ctx); };
    zt_open_options o;
    zt_open_options_init(&o);
    o.cache_bytes = cache_bytes;
    zt_reader* r = nullptr;
    // From here on the library owns `held` (close runs on every outcome).
    const zt_status st = zt_open_source(&s, &o, &r);
    static_cast<void>(held.release());
    detail::check(st);
    return Reader(r);
  }

  /// Takes ownership of a handle from zt_open (NULL makes an empty Reader).
  static Reader adopt(zt_reader* handle) { return Reader(handle); }

  Reader(Reader&& other) noexcept : r_(std::exchange(other.r_, nullptr)) {}
  Reader& operator=(Reader&& other) noexcept {
    if (this != &other) {
      zt_close(r_);
      r_ = std::exchange(other.r_, nullptr);
    }
    return *this;
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() { zt_close(r_); }

  /// Closes now; every handle, span and view from this reader dies with it.
  void close() noexcept { zt_close(std::exchange(r_, nullptr)); }
  bool is_open() const noexcept { return r_ != nullptr; }
  const zt_reader* handle() const noexcept { return r_; }

  /// The version the file states: "1.2.0", "1.1.0", "1.0", "0.1.0"; "" if foreign.
  std::string_view file_version() const {
    return detail::owned_text(zt_file_version(live()), "file version");
  }
  /// "zt", or the foreign format: "safetensors", "gguf", "npy", "npz", "pytorch", "onnx",
  /// "hf_index".
  std::string_view file_format() const {
    return detail::owned_text(zt_file_format(live()), "file format");
  }
  /// The whole manifest as JSON in the 1.2.0 vocabulary.
  std::string_view manifest_json() const {
    const char* j = zt_manifest_json(live());
    if (!j) throw Error(ZT_ERR_NOMEM, "the manifest JSON could not be built");
    return j;
  }

  /// The file's attributes as one encoded CBOR map, exactly as stored
  /// (empty when it has none): every value, NaN and byte strings included.
  std::span<const std::byte> attributes_cbor() const {
    const void* data = nullptr;
    std::size_t size = 0;
    detail::check(zt_file_attributes_cbor(live(), &data, &size));
    return {static_cast<const std::byte*>(data), size};
  }

  /// Objects in manifest order.
  std::size_t size() const { return zt_object_count(live()); }
  Object operator[](std::size_t i) const {
    if (i >= size())
      throw Error(ZT_ERR_NOT_FOUND, "object index " + std::to_string(i) +
                                        " is out of range (the file has " + std::to_string(size()) +
                                        " objects)");
    return {r_, i};
  }
  /// The object called `name`; throws ZT_ERR_NOT_FOUND if there is none.
  Object operator[](std::string_view name) const {
    std::size_t i = 0;
    detail::check(zt_object_find(live(), detail::c_str(name).c_str(), &i));
    return {r_, i};
  }
  /// The object called `name`, or nullopt.
  std::optional<Object> find(std::string_view name) const {
    std::size_t i = 0;
    const zt_status s = zt_object_find(live(), detail::c_str(name).c_str(), &i);
    if (s == ZT_ERR_NOT_FOUND) return std::nullopt;
    detail::check(s);
    return Object(r_, i);
  }
  bool contains(std::string_view name) const { return find(name).has_value(); }

  /// Every object at a glance in one call (zt_object_summaries): what a
  /// loader needs to plan reading a whole model. Views into the Reader,
  /// valid while it is open.
  struct Summary {
    std::string_view name, format, layout;
    std::span<const std::uint64_t> shape;
    std::optional<std::string_view> dtype;  ///< of the "data" component; nullopt without one
    std::optional<std::string_view> type;   ///< its logical type
    std::uint64_t components = 0;
    std::uint64_t attributes_size = 0;  ///< bytes of the attributes' CBOR, 0 if none
  };
  std::vector<Summary> summaries() const {
    std::vector<zt_object_summary> rows(size());
    for (zt_object_summary& row : rows) zt_object_summary_init(&row);
    detail::check(zt_object_summaries(live(), 0, rows.data(), rows.size()));
    std::vector<Summary> out;
    out.reserve(rows.size());
    for (const zt_object_summary& row : rows)
      out.push_back({row.name,
                     row.format,
                     row.layout,
                     {row.shape, row.ndim},
                     detail::opt_text(row.dtype),
                     detail::opt_text(row.type),
                     row.components,
                     row.attributes_size});
    return out;
  }

  /// Where component `role` of every object lies, in one call
  /// (zt_component_extents): for a loader that maps or reads the bytes
  /// itself. `extent` is nullopt where the object has no such component or
  /// its bytes are not in this file; `encoding` is a view into the Reader
  /// ("raw", "zstd", ...; nullopt without the component).
  struct Placement {
    std::optional<Component::Extent> extent;
    std::optional<std::string_view> encoding;
  };
  std::vector<Placement> extents(std::string_view role = "data") const {
    const std::size_t n = size();
    std::vector<std::uint64_t> offsets(n), lengths(n);
    std::vector<const char*> encodings(n);
    detail::check(zt_component_extents(live(), detail::c_str(role).c_str(), 0, n, offsets.data(),
                                       lengths.data(), encodings.data()));
    std::vector<Placement> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (offsets[i] != UINT64_MAX) out[i].extent = Component::Extent{offsets[i], lengths[i]};
      out[i].encoding = detail::opt_text(encodings[i]);
    }
    return out;
  }

  /// Where component `role` of every object lies among the model's files,
  /// in one call (zt_component_files): for a loader that maps a sharded
  /// model's files itself. `file` is the path as the Reader opened it (a
  /// view into the Reader), `device` and `inode` that file's then: compare
  /// them with fstat of what you open by the path. nullopt where the bytes
  /// are in no file (memory, a URL, a tensor a foreign reader reordered).
  struct FilePlacement {
    std::string_view file;
    std::uint64_t device = 0, inode = 0;
    Component::Extent extent;
  };
  std::vector<std::optional<FilePlacement>> files(std::string_view role = "data") const {
    const std::size_t n = size();
    std::vector<const char*> files(n);
    std::vector<std::uint64_t> offsets(n), lengths(n), devices(n), inodes(n);
    detail::check(zt_component_files(live(), detail::c_str(role).c_str(), 0, n, files.data(),
                                     offsets.data(), lengths.data(), devices.data(),
                                     inodes.data()));
    std::vector<std::optional<FilePlacement>> out(n);
    for (std::size_t i = 0; i < n; ++i)
      if (files[i])
        out[i] = FilePlacement{files[i], devices[i], inodes[i],
                               Component::Extent{offsets[i], lengths[i]}};
    return out;
  }

  IndexRange<Reader, Object>::iterator begin() const& { return objects().begin(); }
  IndexRange<Reader, Object>::iterator end() const& { return objects().end(); }
  IndexRange<Reader, Object> objects() const& { return IndexRange<Reader, Object>(this); }
  // A temporary Reader closes at the end of the full expression: its
  // objects would dangle. Keep the Reader in a variable.
  void begin() const&& = delete;
  void end() const&& = delete;
  void objects() const&& = delete;

  /// Bytes [offset, offset + dst.size()) of component `role` of object
  /// `object`, for decode_ranges.
  struct Range {
    std::size_t object = 0;
    std::string role = "data";
    std::uint64_t offset = 0;
    std::span<std::byte> dst;
  };

  /// Decodes every range into its dst on up to `threads` threads (0 = all
  /// cores; zt_decode_ranges). `on_done(index, status)`, when given, is called
  /// as each range completes, from the worker that finished it (several at
  /// once: it must be thread-safe). An exception from on_done is kept (the
  /// first one) and rethrown once every range is done; after one, on_done is
  /// not called again. Every range is attempted; otherwise throws the first
  /// failure in array order.
  template <class OnDone = std::nullptr_t>
  void decode_ranges(std::span<const Range> ranges, unsigned threads = 0,
                     OnDone&& on_done = nullptr) const {
    std::vector<zt_decode_range> c(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      zt_decode_range_init(&c[i]);
      c[i].object = ranges[i].object;
      c[i].role = detail::checked_c_str(ranges[i].role);
      c[i].offset = ranges[i].offset;
      c[i].dst = ranges[i].dst.data();
      c[i].length = ranges[i].dst.size();
    }
    if constexpr (std::is_null_pointer_v<std::remove_cvref_t<OnDone>>) {
      detail::check(zt_decode_ranges(live(), c.data(), c.size(), threads, nullptr, nullptr));
    } else {
      // No exception may unwind through the library's workers: the first
      // is kept here and rethrown after the call.
      struct Done {
        std::remove_reference_t<OnDone>* on_done = nullptr;
        std::atomic<bool> failed{false};
        std::exception_ptr error;
      } done;
      done.on_done = std::addressof(on_done);
      auto tell = [](void* ctx, std::size_t i, zt_status s) noexcept {
        Done& d = *static_cast<Done*>(ctx);
        if (d.failed.load(std::memory_order_acquire)) return;
        try {
          (*d.on_done)(i, s);
        } catch (...) {
          if (!d.failed.exchange(true, std::memory_order_acq_rel))
            d.error = std::current_exception();
        }
      };
      const zt_status s = zt_decode_ranges(live(), c.data(), c.size(), threads, tell, &done);
      if (done.error) std::rethrow_exception(done.error);
      detail::check(s);
    }
  }

  /// One component for decode_many: its decoded bytes go to `dst`, which
  /// must have room for them (zt_component_read_size's capacity; a
  /// Bytes::uninitialized of that size is fresh memory for it). `status`
  /// and `written` say how it went.
  struct Request {
    std::size_t object = 0;
    std::string role = "data";
    std::span<std::byte> dst;
    zt_status status = ZT_OK;   ///< out
    std::uint64_t written = 0;  ///< out: decoded bytes written to dst
  };

  /// Decodes every request into its dst in one zt_decode_many call on up to
  /// `threads` threads (0 = all cores): raw slices, zstd frames and small
  /// components shared out, so that a whole model keeps every core busy.
  /// Every request is attempted and gets its own status and written count;
  /// then the first failure in array order is thrown (a failed request may
  /// leave its dst partly written). The dsts must not overlap.
  void decode_many(std::span<Request> requests, unsigned threads = 0) const {
    std::vector<zt_decode_request> c(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      zt_decode_request_init(&c[i]);
      c[i].object = requests[i].object;
      c[i].role = detail::checked_c_str(requests[i].role);
      c[i].dst = requests[i].dst.data();
      c[i].capacity = requests[i].dst.size();
    }
    const zt_status s = zt_decode_many(live(), c.data(), c.size(), threads);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      requests[i].status = static_cast<zt_status>(c[i].status);
      requests[i].written = c[i].written;
    }
    detail::check(s);
  }

  /// A component for read_many: component `role` of object `object`.
  struct Item {
    std::size_t object = 0;
    std::string role = "data";
  };

  /// Every item's decoded bytes in memory of its own, in the items' order:
  /// a whole model in one decode_many call on up to `threads` threads
  /// (0 = all cores), each Bytes sized first as the read checks it (the
  /// reader's max_decoded_bytes refuses a claim over it before anything is
  /// allocated), allocated fresh and filled in place: no copy, no
  /// zero-filling pass. From 4 MiB each is a mapping of its own in huge
  /// pages; those of 4 KiB up to 4 MiB are carved, back to back on 64-byte
  /// boundaries, out of blocks of up to 32 MiB in huge pages that they
  /// share (a page fault per 2 MiB instead of 16 a 64 KiB tensor), so a
  /// Bytes kept alone keeps its block's memory; smaller ones come from
  /// `new`. A component whose size only decoding tells (a foreign
  /// encoding) is decoded through the reader's cache and copied. Throws the
  /// first item that cannot be sized, before anything is decoded; else,
  /// once every item was attempted, the first failed decode in the items'
  /// order.
  ///
  ///   std::vector<ztensor::Reader::Item> items;
  ///   for (ztensor::Object o : file) items.push_back({o.index()});
  ///   std::vector<ztensor::Bytes> tensors = file.read_many(items);
  std::vector<Bytes> read_many(std::span<const Item> items, unsigned threads = 0) const {
    constexpr std::uint64_t kCarveFrom = 4096, kCarveBelow = std::uint64_t{4} << 20;
    constexpr std::uint64_t kBlockBytes = std::uint64_t{32} << 20, kAlign = 64;
    std::vector<Bytes> out(items.size());
    std::vector<std::uint64_t> sizes(items.size());
    std::vector<bool> sized(items.size());  // false: decoded through the cache already
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Item& item = items[i];
      const char* role = detail::checked_c_str(item.role);
      const zt_status s = zt_component_read_size(live(), item.object, role, &sizes[i]);
      if (s == ZT_ERR_UNSUPPORTED) {  // known only by decoding: the cache's decode sizes it
        const void* data = nullptr;
        std::uint64_t n = 0;
        detail::check(zt_component_map(live(), item.object, role, &data, &n));
        out[i] = fresh(item, n);
        if (n) std::memcpy(out[i].data(), data, static_cast<std::size_t>(n));
        continue;
      }
      detail::check(s);
      sized[i] = true;
    }
    // The carved ones' blocks: consecutive items, each block as full as
    // 32 MiB allows; a block is made only where two or more would share it.
    const auto carved = [&](std::size_t i) {
      return sized[i] && sizes[i] >= kCarveFrom && sizes[i] < kCarveBelow;
    };
    const auto place = [&](std::uint64_t at) { return (at + kAlign - 1) / kAlign * kAlign; };
    for (std::size_t first = 0; first < items.size();) {
      if (!carved(first)) {
        ++first;
        continue;
      }
      std::size_t last = first;
      std::uint64_t length = sizes[first];
      while (last + 1 < items.size() && carved(last + 1) &&
             place(length) + sizes[last + 1] <= kBlockBytes)
        length = place(length) + sizes[++last];
      if (last > first) {
        const Bytes block = fresh(items[first], length);
        for (std::uint64_t at = 0; first <= last; at = place(at + sizes[first++]))
          out[first] = Bytes::carve(block, static_cast<std::size_t>(at),
                                    static_cast<std::size_t>(sizes[first]));
      } else {
        ++first;
      }
    }
    std::vector<Request> requests;
    std::vector<std::size_t> which;  // the item each request is for
    requests.reserve(items.size());
    which.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!sized[i]) continue;
      if (!out[i].data()) out[i] = fresh(items[i], sizes[i]);
      requests.push_back({items[i].object, items[i].role, out[i].span()});
      which.push_back(i);
    }
    decode_many(requests, threads);
    for (std::size_t k = 0; k < requests.size(); ++k)
      out[which[k]].truncate(static_cast<std::size_t>(requests[k].written));
    return out;
  }

  /// Decodes every component and checks every digest and content rule.
  VerifyResult verify() const {
    VerifyResult v;
    detail::check(zt_verify(live(), &v.checked, &v.unchecked));
    return v;
  }

  /// The v2 model's content digest ("sha256:..." or "xxh3:..."), the same
  /// however the model is encoded, aligned or sharded (zt_content_digest).
  std::string content_digest(const char* algorithm = "sha256") const {
    char text[ZT_CONTENT_DIGEST_SIZE];
    detail::check(zt_content_digest(live(), algorithm, text, sizeof text));
    return text;
  }

 private:
  explicit Reader(zt_reader* r) : r_(r) {}

  const zt_reader* live() const {
    if (!r_) throw Error(ZT_ERR_STATE, "the reader is closed");
    return r_;
  }

  /// Bytes::uninitialized(n) for an item; running out of memory names it
  /// (the message is made only then: a model has thousands of items).
  Bytes fresh(const Item& item, std::uint64_t n) const {
    try {
      return Bytes::uninitialized(n);
    } catch (const Error&) {
      const char* name = zt_object_name(live(), item.object);
      throw Error(ZT_ERR_NOMEM, std::string("object \"") + (name ? name : "?") +
                                    "\": component \"" + item.role + "\": cannot allocate " +
                                    std::to_string(n) + " bytes");
    }
  }

  zt_reader* r_ = nullptr;
};

/* ------------------------------------------------------------------------ */
/* Loading to a device through host staging buffers                          */

/// One destination of load_staged: the decoded bytes of component `role`
/// of object `object`, `size` of them.
struct StagedItem {
  std::size_t object = 0;
  std::string role = "data";
  std::uint64_t size = 0;
};

/// Loads every item to a device through a ring of host staging buffers,
/// with the device's own API behind `engine`:
///   engine.copy(item, offset, bytes)  starts an asynchronous copy of
///       `bytes` (a span of a staging buffer) to the item's destination at
///       byte `offset`;
///   engine.fence()  returns a token for the copies started so far;
///   engine.wait(token)  blocks until those copies are done.
/// Items are cut into pieces that fill one buffer at a time (small items
/// batched, large ones split); a batch is decoded into its buffer on every
/// core (decode_ranges), its copies started, and the next batch decoded
/// into the next buffer while they run; a buffer is refilled only after
/// waiting for its last copies. Host memory is the buffers, whatever the
/// items add up to. Waits for every copy before returning or throwing.
template <class Engine>
void load_staged(const Reader& reader, std::span<const StagedItem> items,
                 std::span<const std::span<std::byte>> buffers, Engine& engine,
                 unsigned threads = 0) {
  if (buffers.empty()) throw Error(ZT_ERR_ARGUMENT, "load_staged needs a staging buffer");
  for (const std::span<std::byte> b : buffers)
    if (b.empty()) throw Error(ZT_ERR_ARGUMENT, "load_staged: a staging buffer of 0 bytes");
  using Token = decltype(engine.fence());
  std::vector<std::optional<Token>> pending(buffers.size());
  struct Piece {
    std::size_t item;
    std::uint64_t offset;
    std::span<std::byte> bytes;
  };
  auto drain = [&] {
    for (auto& p : pending)
      if (p) engine.wait(*std::exchange(p, std::nullopt));
  };
  try {
    std::size_t slot = 0, item = 0;
    std::uint64_t offset = 0;
    while (item < items.size()) {
      std::span<std::byte> buf = buffers[slot];
      if (pending[slot]) engine.wait(*std::exchange(pending[slot], std::nullopt));
      std::vector<Reader::Range> ranges;
      std::vector<Piece> pieces;
      std::uint64_t at = 0;
      while (item < items.size() && at < buf.size()) {
        const std::uint64_t n = std::min(items[item].size - offset, buf.size() - at);
        if (n) {
          ranges.push_back({items[item].object, items[item].role, offset, buf.subspan(at, n)});
          pieces.push_back({item, offset, buf.subspan(at, n)});
        }
        at += n;
        offset += n;
        if (offset == items[item].size) {
          ++item;
          offset = 0;
        }
      }
      reader.decode_ranges(ranges, threads);
      for (const Piece& p : pieces) engine.copy(p.item, p.offset, p.bytes);
      pending[slot] = engine.fence();
      slot = (slot + 1) % buffers.size();
    }
  } catch (...) {
    drain();  // no copy may read a buffer once we are gone
    throw;
  }
  drain();
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                    */

enum class Digest : std::uint32_t {
  xxh3 = ZT_DIGEST_XXH3,
  sha256 = ZT_DIGEST_SHA256,
  none = ZT_DIGEST_NONE
};

/// Writer settings; an unset field keeps the library's default.
/// Designated initializers name only what they change:
/// `ztensor::Writer w(path, {.zstd_level = 9, .digest = ztensor::Digest::sha256});`
struct WriterOptions {
  std::optional<int> zstd_level = std::nullopt;
  std::optional<unsigned> threads = std::nullopt;  ///< compression threads; 0 = all cores
  std::optional<Digest> digest = std::nullopt;
  std::optional<std::uint64_t> frame_size = std::nullopt;  ///< input bytes per zstd frame
  std::optional<double> auto_min_ratio =
      std::nullopt;  ///< "auto" keeps zstd if stored <= ratio * raw
  /// The container: 0 = spec 1.2.0 (default), 2 = zTensor v2 (see
  /// zt_writer_options in ztensor.h for what changes).
  std::optional<unsigned> file_version = std::nullopt;
  std::optional<std::uint64_t> alignment = std::nullopt;  ///< v2 only; 0 = 65536
  /// v2 canonical form: objects and components given in bytewise name
  /// order, raw parts, identical parts shared (zt_writer_options.canonical).
  std::optional<bool> canonical = std::nullopt;
  /// v2 only: split into shard files of at most this many bytes.
  std::optional<std::uint64_t> shard_bytes = std::nullopt;
};

/// Writes a .zt file (move-only). Nothing appears at the path until
/// finish(); a Writer destroyed unfinished aborts and removes its temporary
/// file. A Writer belongs to one thread at a time.
class Writer {
 public:
  explicit Writer(const std::filesystem::path& path, const WriterOptions& options = {}) {
    const zt_writer_options o = c_options(options);
    detail::check(zt_writer_open_ex(detail::path_str(path).c_str(), &o, &w_));
  }

  /// Appends a new generation to an existing zTensor v2 file (v2 spec §2.5,
  /// zt_writer_open_append): its objects stay, objects added under their
  /// names replace them, and finish() renames the new generation over the
  /// file; until then (or after abort) the file is unchanged.
  static Writer append(const std::filesystem::path& path, const WriterOptions& options = {}) {
    const zt_writer_options o = c_options(options);
    zt_writer* w = nullptr;
    detail::check(zt_writer_open_append(detail::path_str(path).c_str(), &o, &w));
    return Writer(w);
  }

  Writer(Writer&& other) noexcept : w_(std::exchange(other.w_, nullptr)) {}
  Writer& operator=(Writer&& other) noexcept {
    if (this != &other) {
      zt_writer_abort(w_);
      w_ = std::exchange(other.w_, nullptr);
    }
    return *this;
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer() { zt_writer_abort(w_); }

 private:
  explicit Writer(zt_writer* w) noexcept : w_(w) {}
  static zt_writer_options c_options(const WriterOptions& options) {
    zt_writer_options o;
    zt_writer_options_init(&o);
    if (options.zstd_level) o.zstd_level = *options.zstd_level;
    if (options.threads) o.threads = *options.threads;
    if (options.digest) o.digest = static_cast<std::uint32_t>(*options.digest);
    if (options.frame_size) o.frame_size = *options.frame_size;
    if (options.auto_min_ratio) o.auto_min_ratio = *options.auto_min_ratio;
    if (options.file_version) o.file_version = *options.file_version;
    if (options.alignment) o.alignment = *options.alignment;
    if (options.canonical) o.canonical = *options.canonical ? 1u : 0u;
    if (options.shard_bytes) o.shard_bytes = *options.shard_bytes;
    return o;
  }

 public:
  /// A dense object with one "data" component of raw bytes of `dtype`.
  /// encoding: "raw", "zstd", "auto" or (v2) "planes".
  Writer& add_dense(std::string_view name, std::string_view dtype, Shape shape,
                    std::span<const std::byte> data, std::string_view encoding = "raw") {
    detail::check(zt_writer_add_dense(live(), detail::c_str(name).c_str(),
                                      detail::c_str(dtype).c_str(), shape.data(), shape.size(),
                                      data.data(), data.size(), detail::c_str(encoding).c_str()));
    return *this;
  }

  /// A dense object whose dtype follows from T (float -> "f32", ...).
  template <Element T>
  Writer& add_dense(std::string_view name, std::span<const T> data, Shape shape,
                    std::string_view encoding = "raw") {
    return add_dense(name, dtype_name<T>(), shape, std::as_bytes(data), encoding);
  }
  template <Element T>
  Writer& add_dense(std::string_view name, const std::vector<T>& data, Shape shape,
                    std::string_view encoding = "raw") {
    return add_dense(name, std::span<const T>(data), shape, encoding);
  }

  /// A dense complex object (dtype f32/f64 with type complex64/complex128).
  template <ComplexElement T>
  Writer& add_dense(std::string_view name, std::span<const T> data, Shape shape,
                    std::string_view encoding = "raw") {
    begin_object(name, "dense", shape);
    try {
      add_component<T>("data", data, encoding);
    } catch (...) {
      // As the one-call add_dense: a refused component drops its object,
      // and the writer goes on (the object would stay open otherwise, and
      // finish() refuse to write the file).
      (void)zt_writer_cancel_object(w_);
      throw;
    }
    return end_object();
  }
  template <ComplexElement T>
  Writer& add_dense(std::string_view name, const std::vector<T>& data, Shape shape,
                    std::string_view encoding = "raw") {
    return add_dense(name, std::span<const T>(data), shape, encoding);
  }

  /// General objects (sparse, quantized, anything): begin, add components, end.
  Writer& begin_object(std::string_view name, std::string_view format, Shape shape) {
    detail::check(zt_writer_begin_object(live(), detail::c_str(name).c_str(),
                                         detail::c_str(format).c_str(), shape.data(),
                                         shape.size()));
    return *this;
  }

  /// A component of raw bytes. type: a logical type ("f8_e4m3fn", ...) or none.
  Writer& add_component(std::string_view role, std::string_view dtype,
                        std::optional<std::string_view> type, std::span<const std::byte> data,
                        std::string_view encoding = "raw") {
    const std::optional<std::string> t =
        type ? std::optional<std::string>(detail::c_str(*type)) : std::nullopt;
    detail::check(zt_writer_add_component(
        live(), detail::c_str(role).c_str(), detail::c_str(dtype).c_str(), t ? t->c_str() : nullptr,
        data.data(), data.size(), detail::c_str(encoding).c_str()));
    return *this;
  }

  /// A component whose dtype follows from T.
  template <Element T>
  Writer& add_component(std::string_view role, std::span<const T> data,
                        std::string_view encoding = "raw") {
    return add_component(role, dtype_name<T>(), std::nullopt, std::as_bytes(data), encoding);
  }
  template <Element T>
  Writer& add_component(std::string_view role, const std::vector<T>& data,
                        std::string_view encoding = "raw") {
    return add_component(role, std::span<const T>(data), encoding);
  }
  template <ComplexElement T>
  Writer& add_component(std::string_view role, std::span<const T> data,
                        std::string_view encoding = "raw") {
    constexpr bool single = std::is_same_v<T, std::complex<float>>;
    return add_component(role, single ? "f32" : "f64", single ? "complex64" : "complex128",
                         std::as_bytes(data), encoding);
  }
  template <ComplexElement T>
  Writer& add_component(std::string_view role, const std::vector<T>& data,
                        std::string_view encoding = "raw") {
    return add_component(role, std::span<const T>(data), encoding);
  }
  /// No logical type is std::nullopt; a null pointer is refused at compile
  /// time (it would be read as text).
  Writer& add_component(std::string_view, std::string_view, std::nullptr_t,
                        std::span<const std::byte>, std::string_view = "raw") = delete;

  /// Checks the object against its format and adds it (ZT_ERR_INVALID drops it).
  Writer& end_object() {
    detail::check(zt_writer_end_object(live()));
    return *this;
  }

  /// Drops the object begun last, with every component added so far.
  Writer& cancel_object() {
    detail::check(zt_writer_cancel_object(live()));
    return *this;
  }

  /// Streaming: a component of `decoded_size` bytes written in pieces.
  Writer& begin_component(std::string_view role, std::string_view dtype,
                          std::optional<std::string_view> type, std::string_view encoding,
                          std::uint64_t decoded_size) {
    const std::optional<std::string> t =
        type ? std::optional<std::string>(detail::c_str(*type)) : std::nullopt;
    detail::check(zt_writer_begin_component(live(), detail::c_str(role).c_str(),
                                            detail::c_str(dtype).c_str(), t ? t->c_str() : nullptr,
                                            detail::c_str(encoding).c_str(), decoded_size));
    return *this;
  }
  Writer& begin_component(std::string_view, std::string_view, std::nullptr_t, std::string_view,
                          std::uint64_t) = delete;  // no type is std::nullopt
  Writer& write(std::span<const std::byte> piece) {
    detail::check(zt_writer_write(live(), piece.data(), piece.size()));
    return *this;
  }
  Writer& end_component() {
    detail::check(zt_writer_end_component(live()));
    return *this;
  }

  /// Attributes as JSON object text; object attributes apply to the object begun last.
  Writer& set_file_attributes_json(std::string_view json) {
    detail::check(zt_writer_set_file_attributes_json(live(), detail::c_str(json).c_str()));
    return *this;
  }
  Writer& set_object_attributes_json(std::string_view json) {
    detail::check(zt_writer_set_object_attributes_json(live(), detail::c_str(json).c_str()));
    return *this;
  }
  /// The same as one encoded CBOR map, stored byte for byte (every value exact).
  Writer& set_file_attributes_cbor(std::span<const std::byte> cbor) {
    detail::check(zt_writer_set_file_attributes_cbor(live(), cbor.data(), cbor.size()));
    return *this;
  }
  Writer& set_object_attributes_cbor(std::span<const std::byte> cbor) {
    detail::check(zt_writer_set_object_attributes_cbor(live(), cbor.data(), cbor.size()));
    return *this;
  }

  /// Writes the manifest and publishes the file at its path. The writer is
  /// spent afterwards, whether this succeeds or throws.
  void finish() {
    zt_writer* w = live();
    w_ = nullptr;
    detail::check(zt_writer_finish(w));
  }

  /// Drops everything written; the path is left as it was.
  void abort() noexcept { zt_writer_abort(std::exchange(w_, nullptr)); }

  bool is_open() const noexcept { return w_ != nullptr; }

 private:
  zt_writer* live() const {
    if (!w_) throw Error(ZT_ERR_STATE, "the writer is already finished or aborted");
    return w_;
  }

  zt_writer* w_ = nullptr;
};

}  // namespace ztensor

#endif  // ZTENSOR_HPP
