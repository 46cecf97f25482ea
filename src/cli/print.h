// Arrays printed the way numpy prints them (np.array2string defaults):
// precision 8 with the shortest text that reads back the same value, fixed
// or scientific notation chosen for the whole array, columns aligned,
// lines wrapped at 75 characters, and arrays of more than 1000 elements
// elided to their first and last 3 entries along each dimension.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace zt::cli {

struct Cell {
  __int128 integer = 0;   // integer and bool cells
  double re = 0, im = 0;  // real and complex cells
};

enum class CellKind { integer, boolean, real, complex };

// The float type values came from: their text is the shortest that reads
// back as the same value of that type (numpy's rule).
enum class Precision { f64, f32, f16 };

struct PrintOptions {
  bool full = false;  // never elide
  uint64_t threshold = 1000;
  uint64_t edge = 3;
  size_t linewidth = 75;
  Precision precision = Precision::f64;
  // Asked after the passes that find the columns' form: true prints
  // nothing (reading an element failed; the caller says why).
  std::function<bool()> failed;
};

// Where printed text goes, a piece at a time.
using TextSink = std::function<void(std::string_view)>;

// Prints an array to `sink` as it is made: at(flat) gives the element at a
// row-major flat index; it is called only for the elements shown, in
// row-major order, two or three times each (passes for the column form,
// then the text), and nothing is held but a line, however many are shown.
void print_array(std::span<const uint64_t> shape, CellKind kind,
                 const std::function<Cell(uint64_t)>& at, const PrintOptions& opt,
                 const TextSink& sink);
// The same as one string.
std::string format_array(std::span<const uint64_t> shape, CellKind kind,
                         const std::function<Cell(uint64_t)>& at, const PrintOptions& opt);

// One value as text (no padding), as format_array would show it alone.
std::string format_scalar(CellKind kind, const Cell& c, Precision precision);

std::string int128_text(__int128 v);

}  // namespace zt::cli
