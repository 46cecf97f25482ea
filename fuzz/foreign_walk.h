// Shared by the foreign-format targets (fuzz_format_*.cpp): the fuzzed
// bytes are written to a file of the format's extension and read by the
// library's reader of that format; then everything it hands out is
// touched and checked (sizes against shapes, unique names), and the result
// is written as a .zt file through zt::Writer, as `zt convert` does. The
// readers promise that what they return can go straight to the writer, so
// the writer must accept it, and the file must re-open, verify and hold the
// same bytes. Last, the same file is opened through the C API with
// allow_foreign (a Reader over what the reader holds) and walked like any
// .zt file (walk.h): it must agree with the converted file, component by
// component.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cbor/cbor_encode.h"
#include "cbor/cbor_value.h"
#include "foreign/foreign.h"
#include "foreign/zip_archive.h"
#include "fuzz_support.h"
#include "manifest/json.h"
#include "manifest/manifest.h"
#include "walk.h"
#include "write/writer.h"
#include "ztensor.h"

namespace zt::fuzz {

// Findings F6 and F7 (fuzz/README.md): fixed, so no longer tolerated. F6: the readers hand out what the writer refuses (bool bytes other
// than 0 and 1; names with NUL bytes, invalid UTF-8, or over the name
// limit), so `zt convert` fails part-way. F7: a corrupt .npz is reported as
// ZT_ERR_IO (libzip's ZIP_ER_NOENT) instead of ZT_ERR_FORMAT.
#ifndef ZT_FUZZ_TOLERATE_F6
#define ZT_FUZZ_TOLERATE_F6 0
#endif
#ifndef ZT_FUZZ_TOLERATE_F7
#define ZT_FUZZ_TOLERATE_F7 0
#endif

// What the writer refuses although a reader returned it (F6).
inline bool writer_would_refuse(const foreign::ForeignFile& f) {
  const auto bad_name = [](const std::string& n) {
    return n.empty() || n.size() > (size_t{1} << 16) || n.find('\0') != std::string::npos ||
           !cbor::is_valid_utf8(n);
  };
  for (const foreign::ForeignObject& o : f.objects) {
    if (bad_name(o.name)) return true;
    for (const foreign::ForeignComponent& c : o.components)
      if (c.dtype == DType::boolean)
        for (const uint8_t b : c.bytes)
          if (b > 1) return true;
  }
  return false;
}

inline void walk_foreign(const uint8_t* data, size_t size, const char* extension) {
  const std::string in = scratch_dir() + "/foreign" + extension;
  const std::string out = scratch_dir() + "/foreign_out.zt";
  FUZZ_CHECK(write_file(in, data, size), "cannot write " + in);
  // An ONNX model's external data: the seeds name "w.bin" beside the model,
  // here the same bytes again; any other name is a file that is not there.
  const bool onnx = std::string_view(extension) == ".onnx";
  if (onnx) FUZZ_CHECK(write_file(scratch_dir() + "/w.bin", data, size), "cannot write w.bin");
  auto f = foreign::read_foreign(in);
  if (std::getenv("ZT_FUZZ_VERBOSE"))
    std::fprintf(stderr, "  %s\n",
                 f ? ("read " + std::to_string(f->objects.size()) + " objects").c_str()
                   : f.error().message.c_str());
  if (!f) {
    const Status s = f.error().status;
    if (ZT_FUZZ_TOLERATE_F7 && s == Status::io &&
        f.error().message.find("zip archive") != std::string::npos)
      return;
    if (onnx && s == Status::io) return;  // external data named but absent: a real I/O error
    FUZZ_CHECK(s == Status::format || s == Status::invalid || s == Status::unsupported ||
                   s == Status::limit || s == Status::nomem,
               "reader failed with status " + std::to_string(static_cast<int>(s)) + ": " +
                   f.error().message);
    FUZZ_CHECK(!f.error().message.empty(), "reader failed without a message");
    return;
  }

  // Data a reader leaves where it lies until read (a deflated npz member,
  // inflated as it is read) is read here, as `zt convert` reads it through
  // the Reader: damage in it is refused then, with a status of the file's.
  std::deque<std::vector<uint8_t>> fetched;
  for (foreign::ForeignObject& o : f->objects)
    for (foreign::ForeignComponent& c : o.components) {
      // A zip member's CRC-32, checked at the first read of its bytes (the
      // Reader's check): damage refused then, as a digest mismatch.
      if (c.crc_check) {
        const foreign::PendingCrc& p = f->crc_checks[*c.crc_check];
        const auto held = foreign::check_member_crc(p.bytes, p.crc, p.where);
        if (!held) {
          FUZZ_CHECK(held.error().status == Status::digest,
                     "checking \"" + o.name + "\" failed with status " +
                         std::to_string(static_cast<int>(held.error().status)));
          return;
        }
      }
      if (!c.remote) continue;
      std::vector<uint8_t>& bytes = fetched.emplace_back(c.remote->length);
      const auto got = c.remote->source->read(c.remote->offset, bytes);
      if (!got) {
        const Status st = got.error().status;
        FUZZ_CHECK(st == Status::format || st == Status::invalid || st == Status::limit,
                   "reading \"" + o.name + "\" failed with status " +
                       std::to_string(static_cast<int>(st)) + ": " + got.error().message);
        return;
      }
      c.bytes = bytes;
      // Its bool bytes are checked as it is read too (the Reader's content
      // rule), not by the reader at open, which did not read them.
      if (c.dtype == DType::boolean)
        for (const uint8_t b : c.bytes)
          if (b > 1) return;
    }

  std::set<std::string> names;
  for (const foreign::ForeignObject& o : f->objects) {
    FUZZ_CHECK(names.insert(o.name).second, "duplicate object name \"" + o.name + "\"");
    for (const foreign::ForeignComponent& c : o.components) {
      uint64_t h = 0;
      for (const uint8_t b : c.bytes) h += b;  // every byte handed out is readable
      (void)h;
      if (o.format != "dense" || c.role != "data") continue;
      const LogicalType* lt = c.type ? find_logical_type(*c.type) : nullptr;
      if (c.type && !lt) continue;  // unknown ratio
      const auto n = shape_product(o.shape);
      FUZZ_CHECK(n.has_value(), "object \"" + o.name + "\": shape product overflows");
      const auto want = checked_mul(*n, uint64_t{dtype_width(c.dtype)} * (lt ? lt->ratio : 1));
      FUZZ_CHECK(want && *want == c.bytes.size(), "object \"" + o.name +
                                                      "\": " + std::to_string(c.bytes.size()) +
                                                      " bytes for its shape and dtype");
    }
  }

  if (ZT_FUZZ_TOLERATE_F6 && writer_would_refuse(*f)) return;

  // Through the writer, as `zt convert` does: to v2 where the reader
  // handed out what only v2 says (safetensors F4 as f4_e2m1, a quantized
  // checkpoint's layers as zt.mx/1), as `zt convert --format-version 2`.
  WriterOptions wopt;
  wopt.threads = 1;
  for (const foreign::ForeignObject& o : f->objects) {
    bool v2_only = is_v2_profile_id(o.format);
    for (const foreign::ForeignComponent& c : o.components) {
      const LogicalType* lt = c.type ? find_logical_type(*c.type, true) : nullptr;
      v2_only = v2_only || (lt && lt->v2_only && lt->per_byte);
    }
    if (v2_only) wopt.file_version = 2;
  }
  // v2 names are at most 1024 bytes (v2 spec §3.5); a longer foreign name
  // has no v2 form, which `zt convert` refuses too.
  if (wopt.file_version == 2)
    for (const foreign::ForeignObject& o : f->objects)
      if (o.name.size() > kMaxNameBytesV2) return;
  auto w = Writer::open(out, wopt);
  FUZZ_CHECK(w.ok(), "Writer::open: " + w.error().message);
  auto must = [&](const Result<void>& r, const std::string& what) {
    FUZZ_CHECK(r.ok(), what + " refused what the reader returned: " + r.error().message);
  };
  // As the CLI does: from the values, not their text (foreign keys such as
  // "$bytes" are data, NaN stays NaN).
  auto attributes_cbor = [&](const Json& j) {
    auto c = json_value_to_cbor(j);
    FUZZ_CHECK(c.ok(), "attributes the reader returned do not encode: " + c.error().message);
    return std::move(*c);
  };
  if (!f->attributes.empty())
    must((*w)->set_file_attributes_cbor(attributes_cbor(f->attributes)), "file attributes");
  for (const foreign::ForeignObject& o : f->objects) {
    must((*w)->begin_object(o.name, o.format, o.shape), "begin_object \"" + o.name + "\"");
    if (!o.attributes.empty())
      must((*w)->set_object_attributes_cbor(attributes_cbor(o.attributes)), "object attributes");
    for (const foreign::ForeignComponent& c : o.components)
      must((*w)->add_component(c.role, dtype_name(c.dtype), c.type, c.bytes, "raw"),
           "add_component " + c.role);
    must((*w)->end_object(), "end_object \"" + o.name + "\"");
  }
  must((*w)->finish(), "finish");

  zt_reader* r = nullptr;
  const zt_status s = zt_open(out.c_str(), &r);
  FUZZ_CHECK(s == ZT_OK, std::string("the converted file does not open: ") + zt_last_error());
  FUZZ_CHECK(zt_verify(r, nullptr, nullptr) == ZT_OK,
             std::string("the converted file does not verify: ") + zt_last_error());
  FUZZ_CHECK(zt_object_count(r) == f->objects.size(), "object count changed in conversion");
  for (const foreign::ForeignObject& o : f->objects) {
    size_t i = 0;  // v2 lists objects by name, not in the reader's order
    FUZZ_CHECK(zt_object_find(r, o.name.c_str(), &i) == ZT_OK,
               "object \"" + o.name + "\" lost in conversion");
    for (const foreign::ForeignComponent& c : o.components) {
      const void* p = nullptr;
      uint64_t n = 0;
      FUZZ_CHECK(zt_component_map(r, i, c.role.c_str(), &p, &n) == ZT_OK && n == c.bytes.size() &&
                     (n == 0 || std::memcmp(p, c.bytes.data(), n) == 0),
                 "object \"" + o.name + "\": bytes changed in conversion");
    }
  }
  WalkOptions converted_walk;
  const WalkOutcome converted = walk_reader(r, converted_walk);
  zt_close(r);

  zt_open_options opt;
  zt_open_options_init(&opt);
  opt.allow_foreign = 1;
  const zt_status fs = zt_open_ex(in.c_str(), &opt, &r);
  FUZZ_CHECK(fs == ZT_OK,
             std::string("read, but zt_open_ex with allow_foreign refuses it: ") + zt_last_error());
  WalkOptions foreign_walk;
  foreign_walk.foreign = true;
  const WalkOutcome held = walk_reader(r, foreign_walk);
  zt_close(r);
  FUZZ_CHECK(held.verify_status == converted.verify_status,
             "zt_verify differs between the foreign reader and the converted file");
  compare_components(held, converted);
}

}  // namespace zt::fuzz
