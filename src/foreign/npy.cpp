#include "foreign/npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <unordered_set>

#include "base/byte_order.h"
#include "base/core_count.h"
#include "base/for_each_index.h"
#include "base/zt_limits.h"
#include "foreign/inflated_members.h"
#include "foreign/zip_archive.h"
#include "manifest/manifest.h"

namespace zt::foreign {

using ull = unsigned long long;

namespace {

// ---- The header: a Python dict literal ------------------------------------

struct Token {
  enum Kind { punct, string, name, integer, end, bad } kind = end;
  char punct_char = 0;
  std::string text;
  uint64_t value = 0;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token next() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    Token t;
    if (i_ >= s_.size()) return t;
    const char c = s_[i_];
    if (std::strchr("{}():,[]", c)) {
      ++i_;
      t.kind = Token::punct;
      t.punct_char = c;
      return t;
    }
    if (c == '\'' || c == '"') {
      const size_t close = s_.find(c, i_ + 1);
      if (close == std::string_view::npos) return bad();
      t.kind = Token::string;
      t.text = std::string(s_.substr(i_ + 1, close - i_ - 1));
      i_ = close + 1;
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      t.kind = Token::integer;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        const uint64_t d = static_cast<uint64_t>(s_[i_] - '0');
        if (t.value > (UINT64_MAX - d) / 10) return bad();
        t.value = t.value * 10 + d;
        ++i_;
      }
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long suffix
      return t;
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      t.kind = Token::name;
      while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) t.text += s_[i_++];
      return t;
    }
    return bad();
  }

 private:
  Token bad() {
    Token t;
    t.kind = Token::bad;
    return t;
  }
  std::string_view s_;
  size_t i_ = 0;
};

struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<uint64_t> shape;
};

bool is_punct(const Token& t, char c) {
  return t.kind == Token::punct && t.punct_char == c;
}

Result<NpyHeader> parse_header(std::string_view text, const std::string& where) {
  const char* w = where.c_str();
  Lexer lx(text);
  NpyHeader h;
  bool have_descr = false, have_order = false, have_shape = false;
  ZT_FAIL_IF(!is_punct(lx.next(), '{'), format, "%s: the npy header is not a dict literal", w);
  Token t = lx.next();
  while (!is_punct(t, '}')) {
    ZT_FAIL_IF(t.kind != Token::string, format, "%s: npy header: expected a quoted key", w);
    const std::string key = t.text;
    ZT_FAIL_IF(!is_punct(lx.next(), ':'), format, "%s: npy header: expected ':' after '%s'", w,
               key.c_str());
    Token v = lx.next();
    if (key == "descr") {
      ZT_FAIL_IF(is_punct(v, '['), unsupported,
                 "%s: structured (record) arrays cannot be stored as tensors", w);
      ZT_FAIL_IF(v.kind != Token::string, format, "%s: npy header: 'descr' is not a string", w);
      h.descr = v.text;
      have_descr = true;
    } else if (key == "fortran_order") {
      ZT_FAIL_IF(v.kind != Token::name || (v.text != "True" && v.text != "False"), format,
                 "%s: npy header: 'fortran_order' is not True or False", w);
      h.fortran = v.text == "True";
      have_order = true;
    } else if (key == "shape") {
      ZT_FAIL_IF(!is_punct(v, '('), format, "%s: npy header: 'shape' is not a tuple", w);
      Token d = lx.next();
      while (!is_punct(d, ')')) {
        ZT_FAIL_IF(d.kind != Token::integer, format,
                   "%s: npy header: shape entries must be non-negative integers", w);
        ZT_FAIL_IF(h.shape.size() >= Limits::rank, limit, "%s: more than %u dimensions", w,
                   Limits::rank);
        h.shape.push_back(d.value);
        d = lx.next();
        if (is_punct(d, ','))
          d = lx.next();
        else
          ZT_FAIL_IF(!is_punct(d, ')'), format, "%s: npy header: bad shape tuple", w);
      }
      have_shape = true;
    } else {
      return make_error(Status::format, "%s: npy header: unexpected key '%s'", w, key.c_str());
    }
    t = lx.next();
    if (is_punct(t, ','))
      t = lx.next();
    else
      ZT_FAIL_IF(!is_punct(t, '}'), format, "%s: npy header: expected ',' or '}' after '%s'", w,
                 key.c_str());
  }
  ZT_FAIL_IF(!have_descr || !have_order || !have_shape, format,
             "%s: npy header lacks one of 'descr', 'fortran_order', 'shape'", w);
  return h;
}

// ---- dtypes -----------------------------------------------------------------

struct NpyType {
  DType dtype;
  std::optional<std::string> type;
  unsigned item_bytes;  // bytes of one array element
  bool big_endian;
};

Result<NpyType> npy_type(const std::string& descr, const std::string& where) {
  const char* w = where.c_str();
  ZT_FAIL_IF(descr.size() < 2 || !std::strchr("<>|=", descr[0]), unsupported,
             "%s: npy dtype '%s' is not a simple array type", w, descr.c_str());
  const char order = descr[0];
  const char kind = descr[1];
  const std::string size = descr.substr(2);
  struct Known {
    char kind;
    const char* size;
    DType dtype;
    const char* type;
  };
  static constexpr Known kKnown[] = {
      {'b', "1", DType::boolean, nullptr}, {'i', "1", DType::i8, nullptr},
      {'i', "2", DType::i16, nullptr},     {'i', "4", DType::i32, nullptr},
      {'i', "8", DType::i64, nullptr},     {'u', "1", DType::u8, nullptr},
      {'u', "2", DType::u16, nullptr},     {'u', "4", DType::u32, nullptr},
      {'u', "8", DType::u64, nullptr},     {'f', "2", DType::f16, nullptr},
      {'f', "4", DType::f32, nullptr},     {'f', "8", DType::f64, nullptr},
      {'c', "8", DType::f32, "complex64"}, {'c', "16", DType::f64, "complex128"},
  };
  for (const Known& k : kKnown) {
    if (k.kind != kind || size != k.size) continue;
    NpyType t{k.dtype, k.type ? std::optional<std::string>(k.type) : std::nullopt,
              dtype_width(k.dtype) * (k.type ? 2u : 1u), order == '>'};
    return t;
  }
  const char* what = kind == 'U'   ? "unicode strings"
                     : kind == 'S' ? "byte strings"
                     : kind == 'O' ? "Python objects (pickle)"
                     : kind == 'V' ? "raw void records"
                     : kind == 'M' ? "datetimes"
                     : kind == 'm' ? "timedeltas"
                                   : "an element type without a zTensor dtype";
  return make_error(Status::unsupported, "%s: npy dtype '%s' (%s) cannot be stored as a tensor", w,
                    descr.c_str(), what);
}

// Fortran (column-major) order to row-major, for any rank.
std::vector<uint8_t> fortran_to_c(std::span<const uint8_t> src, std::span<const uint64_t> shape,
                                  unsigned item) {
  std::vector<uint8_t> out(src.size());
  const size_t rank = shape.size();
  std::vector<uint64_t> fstride(rank), index(rank, 0);
  uint64_t s = 1;
  for (size_t k = 0; k < rank; ++k) fstride[k] = s, s *= shape[k];
  const uint64_t count = src.size() / item;
  uint64_t from = 0;
  for (uint64_t n = 0; n < count; ++n) {
    std::memcpy(out.data() + n * item, src.data() + from * item, item);
    // Advance the row-major index (last dimension fastest), tracking the
    // Fortran offset of the element it names.
    for (size_t k = rank; k-- > 0;) {
      if (++index[k] < shape[k]) {
        from += fstride[k];
        break;
      }
      from -= fstride[k] * (shape[k] - 1);
      index[k] = 0;
    }
  }
  return out;
}

std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 4 && base.ends_with(".npy")) base.resize(base.size() - 4);
  return base;
}

}  // namespace

namespace {

// An .npy image's header: what it holds and where its data lies.
struct NpyHead {
  NpyHeader header;
  NpyType type;
  uint64_t data_offset = 0;  // the data's first byte in the image
  uint64_t nbytes = 0;       // the shape's bytes, which are the rest of the image
  bool swap = false;         // big-endian elements wider than a byte
  bool transpose = false;    // Fortran order of rank 2 or more
};

// Bytes of an .npy image up to the end of its header, from its first 12 (or
// fewer: a header that cannot fit says so when parsed); the header's length
// within the limit.
uint64_t npy_head_bytes(std::span<const uint8_t> first) {
  if (first.size() < 10) return 10;
  if (first[6] == 1) return 10 + (first[8] | uint64_t{first[9]} << 8);
  if (first.size() < 12) return 12;
  const uint64_t n =
      first[8] | uint64_t{first[9]} << 8 | uint64_t{first[10]} << 16 | uint64_t{first[11]} << 24;
  return 12 + std::min<uint64_t>(n, Limits::npy_header_bytes);
}

// The header at the start of `prefix`, an image of `image_size` bytes in
// all, whose data must be exactly what the shape says.
Result<NpyHead> parse_npy_head(std::span<const uint8_t> prefix, uint64_t image_size,
                               const std::string& where) {
  const char* w = where.c_str();
  static constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  Cursor cur(prefix);
  std::span<const uint8_t> magic;
  ZT_FAIL_IF(!cur.take(6, magic) || std::memcmp(magic.data(), kMagic, 6) != 0, format,
             "%s: not an .npy array (no \\x93NUMPY magic)", w);
  uint8_t major = 0, minor = 0;
  ZT_FAIL_IF(!cur.le(major) || !cur.le(minor), format, "%s: truncated .npy header", w);
  ZT_FAIL_IF(major < 1 || major > 3, unsupported,
             "%s: .npy format version %u.%u is not supported (1.0 to 3.0 are)", w, major, minor);
  uint64_t header_len = 0;
  if (major == 1) {
    uint16_t n = 0;
    ZT_FAIL_IF(!cur.le(n), format, "%s: truncated .npy header", w);
    header_len = n;
  } else {
    uint32_t n = 0;
    ZT_FAIL_IF(!cur.le(n), format, "%s: truncated .npy header", w);
    header_len = n;
  }
  ZT_FAIL_IF(header_len > Limits::npy_header_bytes, limit,
             "%s: .npy header of %llu bytes exceeds the limit of %llu", w,
             static_cast<ull>(header_len), static_cast<ull>(Limits::npy_header_bytes));
  std::span<const uint8_t> text;
  ZT_FAIL_IF(!cur.take(header_len, text), format,
             "%s: .npy header of %llu bytes goes beyond the end", w, static_cast<ull>(header_len));
  auto h = parse_header(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()),
                        where);
  ZT_TRY(h);
  auto t = npy_type(h->descr, where);
  ZT_TRY(t);
  const auto count = shape_product(h->shape);
  const auto nbytes = count ? checked_mul(*count, t->item_bytes) : std::nullopt;
  ZT_FAIL_IF(!nbytes, invalid, "%s: the shape's byte size overflows 64 bits", w);
  const uint64_t data_offset = prefix.size() - cur.left();
  const uint64_t left = image_size - data_offset;
  ZT_FAIL_IF(*nbytes > left, format, "%s: shape x '%s' needs %llu bytes of data, the file has %llu",
             w, h->descr.c_str(), static_cast<ull>(*nbytes), static_cast<ull>(left));
  ZT_FAIL_IF(*nbytes < left, invalid, "%s: %llu bytes follow the %llu bytes of array data", w,
             static_cast<ull>(left - *nbytes), static_cast<ull>(*nbytes));
  const unsigned width = dtype_width(t->dtype);
  const bool swap = t->big_endian && width > 1;
  const bool transpose = h->fortran && h->shape.size() > 1;
  return NpyHead{std::move(*h), std::move(*t), data_offset, *nbytes, swap, transpose};
}

// The object an .npy header describes, its one component not yet placed.
ForeignObject npy_object(const NpyHead& head, const std::string& name) {
  ForeignObject o;
  o.name = name;
  o.shape = head.header.shape;
  ForeignComponent c;
  c.role = "data";
  c.dtype = head.type.dtype;
  c.type = head.type.type;
  o.components.push_back(std::move(c));
  return o;
}

}  // namespace

Result<ForeignObject> parse_npy(std::span<const uint8_t> image, const std::string& where,
                                const std::string& name, ForeignFile& f, uint64_t limit) {
  const char* w = where.c_str();
  const auto head = parse_npy_head(image, image.size(), where);
  ZT_TRY(head);
  const auto data = image.subspan(head->data_offset, head->nbytes);
  ForeignObject o = npy_object(*head, name);
  ForeignComponent& c = o.components.back();
  if (head->swap || head->transpose) {
    ZT_FAIL_IF(head->nbytes > limit, limit,
               "%s: %llu bytes to reorder (big-endian or Fortran order), more than the limit %llu",
               w, static_cast<ull>(head->nbytes), static_cast<ull>(limit));
    std::vector<uint8_t> bytes = head->transpose
                                     ? fortran_to_c(data, head->header.shape, head->type.item_bytes)
                                     : std::vector<uint8_t>(data.begin(), data.end());
    if (head->swap) swap_elements(bytes, dtype_width(c.dtype));
    f.owned.push_back(std::move(bytes));
    c.bytes = f.owned.back();
  } else {
    c.bytes = data;
  }
  return o;
}

Result<ForeignFile> read_npy(const std::string& path, uint64_t limit) {
  auto mapped = ForeignFile::mapped(path, FileKind::npy);
  ZT_TRY(mapped);
  ForeignFile f = std::move(*mapped);
  ZT_FAIL_IF(f.source.size() < 10, format, "%s: %llu bytes is too short for an .npy file",
             path.c_str(), static_cast<ull>(f.source.size()));
  auto o = parse_npy(std::span<const uint8_t>(f.source.base(), f.source.size()), path,
                     stem_of(path), f, limit);
  ZT_TRY(o);
  f.objects.push_back(std::move(*o));
  return f;
}

namespace {

// Deflated members up to this size are inflated at open (their header is
// most of them); larger ones are served by InflatedMembers as read.
constexpr uint64_t kInflatedAtOpen = uint64_t{64} << 10;
// The cache in front of them keeps small reads (rows, a verify's pieces):
// at most this many bytes.
constexpr uint64_t kInflatedCacheBytes = uint64_t{16} << 20;

// A deflated member's object, its data left in the member: the header is
// inflated (a few hundred bytes) and the data served by `inflated` when it
// is read. nullopt for data that must be reordered to be served (big-endian,
// Fortran order), which the caller inflates whole.
Result<std::optional<ForeignObject>> npy_in_member(
    const ZipArchive& archive, const ZipMember& member, const std::string& where,
    const std::string& name, uint64_t limit, InflatedMembers& inflated,
    const std::shared_ptr<const RangeCache>& cache, std::span<const uint8_t> file) {
  auto stream = archive.stream(member, where, limit);
  ZT_TRY(stream);
  std::vector<uint8_t> prefix(std::min<uint64_t>(member.size, 12));
  ZT_TRY(stream->read(prefix));
  const uint64_t head_bytes = std::min(npy_head_bytes(prefix), member.size);
  if (head_bytes > prefix.size()) {
    const size_t had = prefix.size();
    prefix.resize(head_bytes);
    ZT_TRY(stream->read(std::span<uint8_t>(prefix).subspan(had)));
  }
  const auto head = parse_npy_head(prefix, member.size, where);
  ZT_TRY(head);
  if (head->swap || head->transpose) return std::optional<ForeignObject>();
  ForeignObject o = npy_object(*head, name);
  const uint64_t start = inflated.add(member, where, archive.deflated_in_place(file, member));
  o.components.back().remote = RemoteBytes{cache, start + head->data_offset, head->nbytes};
  return std::optional<ForeignObject>(std::move(o));
}

// The deflated members inflated at open (kInflatedAtOpen or smaller: their
// header is most of them), by ISA-L from the mapping on every core: each
// member's bytes or refusal, in members() order; nothing for the others
// (read through libzip where the open reads them).
std::vector<std::optional<Result<std::vector<uint8_t>>>> inflate_small_members(
    const ZipArchive& archive, std::span<const uint8_t> file,
    const std::vector<std::optional<std::span<const uint8_t>>>& in_place, const std::string& path,
    uint64_t limit) {
  const std::vector<ZipMember>& members = archive.members();
  std::vector<std::optional<Result<std::vector<uint8_t>>>> out(members.size());
  std::vector<std::pair<size_t, std::span<const uint8_t>>> small;
  for (size_t k = 0; k < members.size(); ++k) {
    const ZipMember& m = members[k];
    if (in_place[k] || m.size > kInflatedAtOpen || m.size > limit) continue;
    // libzip's archive serves one caller at a time: the streams are found here.
    if (const auto stream = archive.deflated_in_place(file, m)) small.emplace_back(k, *stream);
  }
  for_each_index(small.size(), std::min(core_count(), 8u), [&](size_t i) {
    const auto& [k, stream] = small[i];
    try {
      out[k] = inflate_member(stream, members[k], member_where(path, members[k].name));
    } catch (const std::bad_alloc&) {
      out[k] = make_error(Status::nomem, "%s: out of memory",
                          member_where(path, members[k].name).c_str());
    }
  });
  return out;
}

}  // namespace

Result<ForeignFile> read_npz(const std::string& path, uint64_t limit) {
  auto opened = ZipArchive::open(path);
  ZT_TRY(opened);
  const auto archive = std::make_shared<const ZipArchive>(std::move(*opened));
  // np.savez stores its members uncompressed: they are viewed in the mapped
  // file once their CRC-32 holds (as a checkpoint's storages are), costing
  // no memory of their size. np.savez_compressed's are inflated as they are
  // read (InflatedMembers), but for small ones and those whose data must be
  // reordered (big-endian, Fortran order: at most `limit` bytes each).
  auto mapped = ForeignFile::mapped(path, FileKind::npz);
  ZT_TRY(mapped);
  ForeignFile f = std::move(*mapped);
  // Members' bytes are viewed in the mapping: stored ones as they are, their
  // CRC-32s checked at the first read of their bytes (PendingCrc) unless
  // their data is copied at open (reordered); deflated ones as
  // InflatedMembers inflates them (the reader holds the mapping as long as
  // the source that inflates them).
  const std::span<const uint8_t> file(f.source.base(), f.source.size());
  const auto in_place = archive->stored_in_place(file, false);
  const auto inflated = std::make_shared<InflatedMembers>(archive, path);
  const auto cache = std::make_shared<const RangeCache>(inflated, kInflatedCacheBytes);
  auto small = inflate_small_members(*archive, file, in_place, path, limit);
  std::unordered_set<std::string> names;
  for (size_t k = 0; k < archive->members().size(); ++k) {
    const ZipMember& member = archive->members()[k];
    const std::string where = member_where(path, member.name);
    ZT_FAIL_IF(!member.name.ends_with(".npy"), unsupported, "%s: not an .npy array", where.c_str());
    std::string name = member.name.substr(0, member.name.size() - 4);
    ZT_FAIL_IF(!names.insert(name).second, invalid, "%s: array \"%s\" appears twice", path.c_str(),
               name.c_str());
    ZT_FAIL_IF(member.size > limit, limit, "%s: %llu bytes, more than the limit %llu",
               where.c_str(), static_cast<ull>(member.size), static_cast<ull>(limit));
    if (!in_place[k] && member.size > kInflatedAtOpen) {
      auto o = npy_in_member(*archive, member, where, name, limit, *inflated, cache, file);
      ZT_TRY(o);
      if (*o) {
        f.objects.push_back(std::move(**o));
        continue;
      }
    }
    std::span<const uint8_t> image;
    if (in_place[k]) {
      image = *in_place[k];
    } else {
      auto bytes = small[k] ? std::move(*small[k]) : archive->read(member, where, limit);
      ZT_TRY(bytes);
      f.owned.push_back(std::move(*bytes));
      image = f.owned.back();
    }
    auto o = parse_npy(image, where, name, f, limit);
    if (in_place[k]) {
      // A header that does not parse is first a member that fails its CRC.
      if (!o) ZT_TRY(check_member_crc(image, member.crc, where, Status::format));
      ZT_TRY(o);
      ForeignComponent& c = o->components.back();
      const bool viewed = c.bytes.empty() || (c.bytes.data() >= image.data() &&
                                              c.bytes.data() < image.data() + image.size());
      if (!viewed) {  // copied at open: checked now
        ZT_TRY(check_member_crc(image, member.crc, where, Status::format));
      } else {
        c.crc_check = static_cast<uint32_t>(f.crc_checks.size());
        f.crc_checks.push_back(PendingCrc{image, member.crc, where});
      }
    }
    ZT_TRY(o);
    f.objects.push_back(std::move(*o));
  }
  return f;
}

std::optional<std::string> npy_descr(DType dtype, const std::optional<std::string>& type) {
  if (type) {
    if (*type == "complex64" && dtype == DType::f32) return "<c8";
    if (*type == "complex128" && dtype == DType::f64) return "<c16";
    if (*type == "bool" && dtype == DType::u8) return "|b1";  // v2's bool
    return std::nullopt;
  }
  switch (dtype) {
    case DType::boolean:
      return "|b1";
    case DType::i8:
      return "|i1";
    case DType::u8:
      return "|u1";
    case DType::i16:
      return "<i2";
    case DType::u16:
      return "<u2";
    case DType::i32:
      return "<i4";
    case DType::u32:
      return "<u4";
    case DType::i64:
      return "<i8";
    case DType::u64:
      return "<u8";
    case DType::f16:
      return "<f2";
    case DType::f32:
      return "<f4";
    case DType::f64:
      return "<f8";
    case DType::bf16:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string npy_header(const std::string& descr, std::span<const uint64_t> shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  dict += "), }";
  // magic (6) + version (2) + length (2) + dict + padding + '\n', 64-aligned.
  const size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

}  // namespace zt::foreign
