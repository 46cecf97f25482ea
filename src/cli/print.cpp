#include "print.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "views/fp_convert.h"

namespace zt::cli {

namespace {

constexpr uint64_t kEllipsis = std::numeric_limits<uint64_t>::max();
constexpr int kPrecision = 8;

std::string strip_fraction_zeros(std::string s, std::chars_format fmt) {
  const size_t e = fmt == std::chars_format::scientific ? s.find('e') : s.size();
  size_t cut = e;
  while (cut > 0 && s[cut - 1] == '0') --cut;
  if (cut > 0 && s[cut - 1] == '.') --cut;
  s.erase(cut, e - cut);
  return s;
}

// Shortest text that reads back as the same value of its type, capped at
// kPrecision fraction digits.
std::string shortest(double v, Precision prec, std::chars_format fmt) {
  char buf[512];
  auto emit = [&](auto x, std::optional<int> precision) {
    const auto r = precision ? std::to_chars(buf, buf + sizeof buf, x, fmt, *precision)
                             : std::to_chars(buf, buf + sizeof buf, x, fmt);
    return std::string(buf, r.ptr);
  };
  if (prec == Precision::f16) {
    // to_chars knows no binary16: try ever more digits until one reads back.
    const uint16_t want = f16_bits_of(v);
    for (int digits = 0; digits < kPrecision; ++digits) {
      const std::string s = emit(v, digits);
      double back = 0;
      std::from_chars(s.data(), s.data() + s.size(), back);
      if (f16_bits_of(back) == want) return strip_fraction_zeros(s, fmt);
    }
    return strip_fraction_zeros(emit(v, kPrecision), fmt);
  }
  auto with = [&](std::optional<int> precision) {
    return prec == Precision::f32 ? emit(static_cast<float>(v), precision) : emit(v, precision);
  };
  std::string s = with(std::nullopt);
  const size_t dot = s.find('.');
  const size_t end = fmt == std::chars_format::scientific ? s.find('e') : s.size();
  if (dot != std::string::npos && end - dot - 1 > static_cast<size_t>(kPrecision))
    s = strip_fraction_zeros(with(kPrecision), fmt);  // rounding can leave zeros at the end
  return s;
}

struct FloatParts {
  bool finite = true;
  std::string special;  // nan, inf, -inf
  std::string whole;    // sign and integer digits (fixed) or mantissa's leading digit
  std::string frac;     // fraction digits
  std::string exp;      // exponent with sign ("-05"), scientific only
};

FloatParts split(double v, Precision prec, bool scientific) {
  FloatParts p;
  if (!std::isfinite(v)) {
    p.finite = false;
    p.special = std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
    return p;
  }
  const std::string s =
      shortest(v, prec, scientific ? std::chars_format::scientific : std::chars_format::fixed);
  const size_t e = scientific ? s.find('e') : std::string::npos;
  const std::string mant = e == std::string::npos ? s : s.substr(0, e);
  if (e != std::string::npos) p.exp = s.substr(e + 1);
  const size_t dot = mant.find('.');
  p.whole = mant.substr(0, dot);
  if (dot != std::string::npos) p.frac = mant.substr(dot + 1);
  return p;
}

// Formats a column of reals to one common width, chosen from every value
// shown, as numpy does, in two passes over them (nothing is held): see_range
// for the notation (scientific when the largest magnitude reaches 1e8, the
// smallest non-zero one is under 1e-4, or they span more than three
// decades), then see_widths for the widths of the parts.
class RealFormat {
 public:
  explicit RealFormat(Precision prec) : prec_(prec) {}

  void see_range(double v) {
    if (!std::isfinite(v) || v == 0) return;
    lo_ = std::min(lo_, std::fabs(v));
    hi_ = std::max(hi_, std::fabs(v));
  }
  void see_widths(double v) {
    scientific_ = hi_ != 0 && (hi_ >= 1e8 || lo_ < 1e-4 || hi_ / lo_ > 1e3);
    const FloatParts p = split(v, prec_, scientific_);
    if (!p.finite) {
      special_w_ = std::max(special_w_, p.special.size());
      return;
    }
    whole_w_ = std::max(whole_w_, p.whole.size());
    frac_w_ = std::max(frac_w_, p.frac.size());
    exp_w_ = std::max(exp_w_, p.exp.size());
  }

  // v in scientific notation with exactly `digits` fraction digits.
  FloatParts split_to(double v, size_t digits) const {
    char buf[128];
    const int prec = static_cast<int>(digits);
    const auto r =
        prec_ == Precision::f32
            ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v),
                            std::chars_format::scientific, prec)
            : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, prec);
    const std::string s(buf, r.ptr);
    FloatParts p;
    const size_t e = s.find('e'), dot = s.find('.');
    p.exp = s.substr(e + 1);
    p.whole = s.substr(0, std::min(dot, e));
    if (dot != std::string::npos) p.frac = s.substr(dot + 1, e - dot - 1);
    return p;
  }

  std::string operator()(double v) const {
    const FloatParts p = split(v, prec_, scientific_);
    const size_t width =
        std::max(special_w_, whole_w_ + 1 + frac_w_ + (scientific_ ? 1 + exp_w_ : 0));
    if (!p.finite) return std::string(width - p.special.size(), ' ') + p.special;
    std::string s;
    if (scientific_) {
      // Shorter mantissas get more of their own digits, as numpy does.
      const FloatParts q = p.frac.size() < frac_w_ ? split_to(v, frac_w_) : p;
      std::string exp = q.exp;
      // Exponents share a digit count: e+05, e+100.
      if (exp.size() < exp_w_) exp.insert(1, exp_w_ - exp.size(), '0');
      s = std::string(whole_w_ - std::min(whole_w_, q.whole.size()), ' ') + q.whole + '.' + q.frac +
          'e' + exp;
    } else {
      s = std::string(whole_w_ - p.whole.size(), ' ') + p.whole + '.' + p.frac +
          std::string(frac_w_ - p.frac.size(), ' ');
    }
    return std::string(width - std::min(width, s.size()), ' ') + s;
  }

 private:
  Precision prec_ = Precision::f64;
  double lo_ = std::numeric_limits<double>::infinity(), hi_ = 0;
  bool scientific_ = false;
  size_t whole_w_ = 0, frac_w_ = 0, exp_w_ = 0, special_w_ = 0;
};

std::string pad_left(const std::string& s, size_t w) {
  return std::string(w - std::min(w, s.size()), ' ') + s;
}

// The indices shown along one dimension, kEllipsis where entries are left
// out: worked out as they are asked for, never listed (--full of 2^31
// values would list 16 GiB of them).
class ShownAxis {
 public:
  ShownAxis(uint64_t n, bool elide, uint64_t edge)
      : n_(n), edge_(edge), elided_(elide && n > 2 * edge) {}
  uint64_t size() const { return elided_ ? 2 * edge_ + 1 : n_; }
  uint64_t operator[](uint64_t i) const {
    if (!elided_ || i < edge_) return i;
    return i == edge_ ? kEllipsis : n_ - (2 * edge_ + 1 - i);
  }

 private:
  uint64_t n_, edge_;
  bool elided_;
};

// Text written out as it is made, a piece of 64 KiB at a time.
class Out {
 public:
  explicit Out(const TextSink& sink) : sink_(sink) {}
  ~Out() { flush(); }
  Out& operator<<(std::string_view t) {
    text_.append(t);
    if (text_.size() >= (size_t{64} << 10)) flush();
    return *this;
  }
  void flush() {
    if (!text_.empty()) sink_(text_);
    text_.clear();
  }

 private:
  const TextSink& sink_;
  std::string text_;
};

// The nested blocks numpy prints, written as they are made: words come
// from word(flat) one at a time, so what is held is one line.
class ValueBlocks {
 public:
  ValueBlocks(std::span<const uint64_t> shape, const std::vector<ShownAxis>& shown,
              const std::function<std::string(uint64_t)>& word, size_t linewidth, Out& out)
      : shape_(shape), shown_(shown), word_(word), linewidth_(linewidth), out_(out) {
    stride_.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) stride_[d - 1] = stride_[d] * shape[d];
  }

  // The block of dimension `dim` starting at flat index `base`. Its first
  // line follows `dim` opening brackets; later lines carry their indent.
  void block(size_t dim, uint64_t base) {
    const size_t rank = shape_.size();
    const std::string indent(dim + 1, ' ');
    const auto& idx = shown_[dim];
    if (dim + 1 == rank) {
      std::string line = "[";
      size_t col = dim + 1;
      for (size_t i = 0; i < idx.size(); ++i) {
        const std::string word = idx[i] == kEllipsis ? "..." : word_(base + idx[i]);
        const size_t closing = i + 1 == idx.size() ? 1 : 0;
        if (i > 0 && col + 1 + word.size() + closing > linewidth_) {
          while (!line.empty() && line.back() == ' ') line.pop_back();  // as numpy does
          line += '\n';
          out_ << line;
          line = indent;
          line += word;
          col = indent.size() + word.size();
          continue;
        }
        if (i > 0) line += ' ', ++col;
        line += word;
        col += word.size();
      }
      line += ']';
      out_ << line;
      return;
    }
    out_ << "[";
    const std::string sep = std::string(rank - dim - 1, '\n') + indent;
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i > 0) out_ << sep;
      if (idx[i] == kEllipsis)
        out_ << "...";
      else
        block(dim + 1, base + idx[i] * stride_[dim]);
    }
    out_ << "]";
  }

 private:
  std::span<const uint64_t> shape_;
  const std::vector<ShownAxis>& shown_;
  const std::function<std::string(uint64_t)>& word_;
  size_t linewidth_;
  Out& out_;
  std::vector<uint64_t> stride_;
};

// Calls f with every flat index the layout shows, in row-major order.
template <class F>
void for_each_shown(std::span<const uint64_t> shape, const std::vector<ShownAxis>& shown,
                    size_t dim, uint64_t base, const F& f) {
  if (dim == shape.size()) {
    f(base);
    return;
  }
  uint64_t stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
  for (uint64_t k = 0; k < shown[dim].size(); ++k)
    if (const uint64_t i = shown[dim][k]; i != kEllipsis)
      for_each_shown(shape, shown, dim + 1, base + i * stride, f);
}

// The imaginary part of a complex cell from the padded text of its magnitude:
// the sign goes before the digits, and numpy pads after the "j" ("  1.  " with
// a minus is "  -1.j  "). Built by appending pieces, never by inserting into
// the string: GCC 12 at -O3 misreads std::string::insert as an overlapping
// memcpy (-Wrestrict).
std::string imaginary_word(std::string_view magnitude, bool negative) {
  const size_t lead = std::min(magnitude.find_first_not_of(' '), magnitude.size());
  const size_t last = magnitude.find_last_not_of(' ');
  const size_t end = last == std::string_view::npos ? lead : last + 1;
  std::string word;
  word.reserve(magnitude.size() + 2);
  word.append(magnitude.substr(0, lead));
  word += negative ? '-' : '+';
  word.append(magnitude.substr(lead, end - lead));
  word += 'j';
  word.append(magnitude.substr(end));
  return word;
}

}  // namespace

std::string int128_text(__int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  unsigned __int128 u =
      negative ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) s += static_cast<char>('0' + static_cast<int>(u % 10)), u /= 10;
  if (negative) s += '-';
  return {s.rbegin(), s.rend()};
}

void print_array(std::span<const uint64_t> shape, CellKind kind,
                 const std::function<Cell(uint64_t)>& at, const PrintOptions& opt,
                 const TextSink& sink) {
  Out out(sink);
  uint64_t total = 1;
  for (const uint64_t d : shape) total = d && total > UINT64_MAX / d ? UINT64_MAX : total * d;
  // numpy prints every empty array as "[]". Return before listing the
  // indices of the other dimensions, which may be 2^40 long.
  if (total == 0 && !shape.empty()) {
    out << "[]";
    return;
  }
  const bool elide = !opt.full && total > opt.threshold;
  std::vector<ShownAxis> shown;
  for (const uint64_t d : shape) shown.emplace_back(d, elide, opt.edge);
  // The shown values are visited once to find the columns' form and once to
  // print them (reals twice before: notation, then widths): memory is a
  // line's, however many values are shown (a [2]*27 array shows them all).
  const auto each = [&](const auto& f) { for_each_shown(shape, shown, 0, 0, f); };
  std::function<std::string(uint64_t)> word;
  size_t w = 0;
  RealFormat fr(opt.precision), fi(opt.precision);
  switch (kind) {
    case CellKind::integer:
      each([&](uint64_t f) { w = std::max(w, int128_text(at(f).integer).size()); });
      word = [&](uint64_t f) { return pad_left(int128_text(at(f).integer), w); };
      break;
    case CellKind::boolean:
      each([&](uint64_t f) { w = std::max<size_t>(w, at(f).integer ? 4 : 5); });
      word = [&](uint64_t f) { return pad_left(at(f).integer ? "True" : "False", w); };
      break;
    case CellKind::real:
      each([&](uint64_t f) { fr.see_range(at(f).re); });
      each([&](uint64_t f) { fr.see_widths(at(f).re); });
      word = [&](uint64_t f) { return fr(at(f).re); };
      break;
    case CellKind::complex:
      each([&](uint64_t f) {
        const Cell c = at(f);
        fr.see_range(c.re), fi.see_range(std::fabs(c.im));
      });
      each([&](uint64_t f) {
        const Cell c = at(f);
        fr.see_widths(c.re), fi.see_widths(std::fabs(c.im));
      });
      word = [&](uint64_t f) {
        const Cell c = at(f);
        return fr(c.re) + imaginary_word(fi(std::fabs(c.im)), std::signbit(c.im));
      };
      break;
  }
  if (opt.failed && opt.failed()) return;
  if (shape.empty()) {
    out << word(0);
    return;
  }
  ValueBlocks(shape, shown, word, opt.linewidth, out).block(0, 0);
}

std::string format_array(std::span<const uint64_t> shape, CellKind kind,
                         const std::function<Cell(uint64_t)>& at, const PrintOptions& opt) {
  std::string text;
  print_array(shape, kind, at, opt, [&](std::string_view t) { text.append(t); });
  return text;
}

std::string format_scalar(CellKind kind, const Cell& c, Precision precision) {
  PrintOptions opt;
  opt.precision = precision;
  return format_array(
      {}, kind, [&](uint64_t) { return c; }, opt);
}

}  // namespace zt::cli
