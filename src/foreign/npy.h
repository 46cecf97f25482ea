// NumPy .npy (format versions 1.0, 2.0, 3.0) and .npz (a zip archive of
// .npy members, stored or deflated; read with libzip).
//
// Every dtype a component can hold is read: bool, int8..int64, uint8..uint64,
// float16/32/64, complex64 and complex128 (f32/f64 + type complex64/128),
// in either byte order (big-endian data is swapped). Fortran-order arrays
// are transposed to row-major. Structured, string, object (pickle),
// datetime and long double arrays are refused with their descr named.
// The header is a Python dict literal; it is tokenised here (no library
// reads it) with a bounded length, and nothing in it is evaluated.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "foreign/foreign.h"

namespace zt::foreign {

// An .npy file becomes one object named after the file (without ".npy").
// Data that must be copied to be served (big-endian, Fortran order) is
// refused beyond `limit` bytes (the caller's cap on a component) before it
// is allocated.
Result<ForeignFile> read_npy(const std::string& path, uint64_t limit = Limits::decoded_bytes);
// Each NAME.npy member of an .npz becomes object NAME.
// Members inflated beyond `limit` bytes (the caller's cap on a component)
// are refused before they are allocated.
Result<ForeignFile> read_npz(const std::string& path, uint64_t limit = Limits::decoded_bytes);

// Parses one .npy image into `out` (bytes view `image` when they need no
// change, else land in f.owned, at most `limit` of them). `where` names it
// in messages.
Result<ForeignObject> parse_npy(std::span<const uint8_t> image, const std::string& where,
                                const std::string& name, ForeignFile& f, uint64_t limit);

// The numpy descr ("<f4", "|b1", "<c8", ...) of a dtype and logical type, if
// numpy has one.
std::optional<std::string> npy_descr(DType dtype, const std::optional<std::string>& type);

// An .npy version 1.0 header (C order, padded so data starts 64-aligned).
std::string npy_header(const std::string& descr, std::span<const uint64_t> shape);

}  // namespace zt::foreign
