// libFuzzer target: a fuzzed sequence of writer calls with fuzzed arguments.
//
// The input is decoded into a program (options, then calls) that runs twice,
// into two directories, the second time with two compression threads. The
// writer must refuse what is bad; both runs must give the same statuses;
// whatever finishes must be byte-identical between the runs, re-open, verify,
// walk cleanly (fuzz/walk.h) and hold exactly the objects whose calls
// succeeded, with their bytes; whatever does not finish must leave the
// target as it was and no temporary file behind.
//
// Input layout (every read past the end gives zeros; see ByteReader):
//   options: u8 digest/level/preexisting-target/v2 bits, u8 frame size, u8 auto ratio
//   calls:   u8 opcode (mod kOps), then the call's arguments
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "walk.h"
#include "ztensor.h"

namespace {

using namespace zt::fuzz;

enum Op : uint8_t {
  kAddDense,
  kBeginObject,
  kAddComponent,
  kEndObject,
  kBeginComponent,
  kWrite,
  kEndComponent,
  kFileAttributes,
  kObjectAttributes,
  kFinish,
  kAbort,
  kAddDenseExact,
  kOps
};

// An optional C string argument (nullopt stands for NULL).
using Text = std::optional<std::string>;
inline const char* c_str(const Text& t) {
  return t ? t->c_str() : nullptr;
}

struct Call {
  Op op = kFinish;
  Text name, dtype, type, format, encoding, json;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
  uint64_t decoded_size = 0;
};

struct Program {
  zt_writer_options options{};
  bool preexisting_target = false;
  std::vector<Call> calls;
};

// ---- decoding the input ----------------------------------------------------

const char* const kNames[] = {"w", "b", "layer.0.weight", "x", "", "\xc3\xa9t\xc3\xa9", "a/b", "w"};
const char* const kDtypes[] = {"f64", "f32", "f16", "bf16", "i64",  "i32",     "i16",       "i8",
                               "u64", "u32", "u16", "u8",   "bool", "float32", "f8_e4m3fn", ""};
const char* const kTypes[] = {"f8_e4m3fn", "f8_e5m2",    "f8_e4m3fnuz", "f8_e5m2fnuz",
                              "complex64", "complex128", "mytype"};
const char* const kFormats[] = {
    "dense", "sparse_csr", "sparse_coo", "quantized_group", "custom_layout", "acme.paged/1", ""};
const char* const kRoles[] = {"data",   "values",        "indices", "indptr",
                              "coords", "packed_weight", "scales",  "zeros"};
const char* const kEncodings[] = {"raw", "zstd", "auto", "lz4", "planes"};
const char* const kJson[] = {
    "{}",
    "{\"bits\": 4, \"group_size\": 2, \"packing\": \"8_per_i32\"}",
    "{\"bits\": 8, \"group_size\": 4, \"packing\": \"4_per_i32\"}",
    "{\"bits\": 3, \"group_size\": 32, \"packing\": \"bitstream\"}",
    ("{\"framework\": \"PyTorch\", \"n\": -3, \"f\": 1.5, \"t\": true, \"z\": null, \"a\": [1, [2, "
     "{}]],"
     " \"b\": {\"$bytes\": \"AAEC\"}, \"big\": 18446744073709551615}"),
    "{\"a\": 1, \"a\": 2}",
    "[1, 2]",
};

uint8_t width_of(const std::string& dtype) {
  if (dtype == "f64" || dtype == "i64" || dtype == "u64") return 8;
  if (dtype == "f32" || dtype == "i32" || dtype == "u32") return 4;
  if (dtype == "f16" || dtype == "bf16" || dtype == "i16" || dtype == "u16") return 2;
  return 1;
}

class Decoder {
 public:
  explicit Decoder(ByteReader& in) : in_(in) {}

  // Fuzzed text as a C caller can pass it: up to the first NUL.
  std::string c_text(size_t n) {
    std::string t = in_.text(n);
    return t.substr(0, t.find('\0'));
  }

  template <size_t N>
  Text pick(const char* const (&list)[N], size_t max_fuzzed) {
    const uint8_t sel = in_.u8();
    if (sel == 0xFF) return std::nullopt;
    if (sel & 0x80) return c_text(in_.u8() % (max_fuzzed + 1));
    return std::string(list[sel % N]);
  }

  Text name() {
    const uint8_t sel = in_.u8();
    if (sel == 0xFE)
      return std::string(size_t{1} << 16, 'n') + "x";  // one byte over the name limit
    if (sel == 0xFF) return std::nullopt;
    if (sel & 0x80) return c_text(in_.u8());
    return std::string(kNames[sel % 8]);
  }

  Text type() {
    const uint8_t sel = in_.u8();
    if (sel < 0x80) return std::nullopt;  // usually no logical type
    if (sel >= 0xF0) return c_text(in_.u8() % 16);
    return std::string(kTypes[sel % 7]);
  }

  Text json() {
    const uint8_t sel = in_.u8();
    if (sel == 0xFF) return std::nullopt;
    if (sel == 0xFE) {
      // Nested deeper than the manifest's CBOR depth limit.
      const size_t depth = 100 + in_.u8();
      std::string s = "{\"d\": ";
      for (size_t i = 0; i < depth; ++i) s += "[";
      for (size_t i = 0; i < depth; ++i) s += "]";
      return s + "}";
    }
    if (sel & 0x80) return c_text(in_.u16() % 1024);
    return std::string(kJson[sel % 7]);
  }

  std::vector<uint64_t> shape() {
    const uint8_t r = in_.u8();
    const size_t rank = (r & 0x80) ? (r & 0x7F) : (r % 4);
    std::vector<uint64_t> s;
    for (size_t i = 0; i < rank; ++i) {
      const uint8_t d = in_.u8();
      s.push_back(d == 0xFF ? in_.u64() : d % 17);
    }
    return s;
  }

  // Data bytes: taken from the input, a pattern, zeros, or exactly
  // `elements` x `width` pattern bytes.
  std::vector<uint8_t> data(uint64_t elements, uint8_t width) {
    const uint8_t mode = in_.u8();
    size_t n = 0;
    switch (mode % 4) {
      case 0:
        return in_.bytes(in_.u16() % 4096);
      case 1:
        n = elements * width <= (1u << 20) ? static_cast<size_t>(elements * width) : 0;
        break;
      case 2:
        n = in_.u16() % 8192;
        break;
      default:
        return std::vector<uint8_t>(static_cast<size_t>(in_.u16()) * 4, 0);
    }
    std::vector<uint8_t> b(n);
    const uint8_t seed = in_.u8();
    for (size_t i = 0; i < n; ++i)
      b[i] = static_cast<uint8_t>((i / 7 + seed) % 251 % (mode & 0x10 ? 2 : 256));
    return b;
  }

  Call call() {
    Call c;
    c.op = static_cast<Op>(in_.u8() % kOps);
    switch (c.op) {
      case kAddDense:
      case kAddDenseExact: {
        c.name = name();
        c.dtype = pick(kDtypes, 8);
        c.shape = shape();
        uint64_t elements = 1;
        for (const uint64_t d : c.shape)
          elements = d && elements > UINT64_MAX / d ? UINT64_MAX : elements * d;
        c.data = data(c.op == kAddDenseExact ? elements : 0, width_of(c.dtype.value_or("")));
        if (c.op == kAddDenseExact && c.data.size() != elements * width_of(c.dtype.value_or("")))
          c.data.resize(elements * width_of(c.dtype.value_or("")) <= (1u << 20)
                            ? static_cast<size_t>(elements * width_of(c.dtype.value_or("")))
                            : 0);
        c.encoding = pick(kEncodings, 8);
        break;
      }
      case kBeginObject:
        c.name = name();
        c.format = pick(kFormats, 16);
        c.shape = shape();
        break;
      case kAddComponent:
        c.name = pick(kRoles, 8);
        c.dtype = pick(kDtypes, 8);
        c.type = type();
        c.data = data(in_.u8(), width_of(c.dtype.value_or("")));
        c.encoding = pick(kEncodings, 8);
        break;
      case kBeginComponent: {
        c.name = pick(kRoles, 8);
        c.dtype = pick(kDtypes, 8);
        c.type = type();
        c.encoding = pick(kEncodings, 8);
        const uint8_t sel = in_.u8();
        c.decoded_size =
            sel == 0xFF ? in_.u64() : static_cast<uint64_t>(sel) * width_of(c.dtype.value_or(""));
        break;
      }
      case kWrite:
        c.data = data(in_.u8(), 1);
        break;
      case kFileAttributes:
      case kObjectAttributes:
        c.json = json();
        break;
      default:
        break;
    }
    return c;
  }

  Program program() {
    Program p;
    zt_writer_options_init(&p.options);
    const uint8_t o = in_.u8();
    p.options.digest = o % 3;
    static const int kLevels[] = {1, 3, -5, 0, 2, -1, 1, 1};
    p.options.zstd_level = kLevels[(o >> 2) & 7];
    p.preexisting_target = (o & 0x20) != 0;
    if (o & 0x40) p.options.file_version = 2;  // zTensor v2, 65536 alignment
    p.options.frame_size = 1024u * (1 + in_.u8() % 8);
    p.options.auto_min_ratio = in_.u8() / 200.0;
    p.options.threads = 1;
    while (!in_.empty() && p.calls.size() < 64) {
      p.calls.push_back(call());
      if (p.calls.back().op == kFinish || p.calls.back().op == kAbort) break;
    }
    return p;
  }

 private:
  ByteReader& in_;
};

// ---- what should be in the file ----------------------------------------------

struct ModelComponent {
  std::string role, dtype;
  std::vector<uint8_t> bytes;
};
struct ModelObject {
  std::string name, format;
  std::vector<uint64_t> shape;
  std::vector<ModelComponent> components;
};

struct RunResult {
  std::vector<zt_status> statuses;
  bool finished = false;  // zt_writer_finish returned ZT_OK
  std::vector<ModelObject> objects;
};

// ZT_FUZZ_VERBOSE=1 prints every call's status (for writing seeds).
bool verbose() {
  static const bool v = std::getenv("ZT_FUZZ_VERBOSE") != nullptr;
  return v;
}

const std::vector<uint8_t> kOldTarget = {'o', 'l', 'd', '\n'};

RunResult run(const Program& p, const std::string& dir, unsigned threads) {
  RunResult res;
  const std::string target = dir + "/t.zt";
  if (p.preexisting_target)
    FUZZ_CHECK(write_file(target, kOldTarget.data(), kOldTarget.size()), "setup");

  zt_writer_options opt = p.options;
  opt.threads = threads;
  zt_writer* w = nullptr;
  const zt_status open_status = zt_writer_open_ex(target.c_str(), &opt, &w);
  FUZZ_CHECK(open_status == ZT_OK, "zt_writer_open_ex: " + status_text(open_status));

  std::optional<ModelObject> current;
  std::optional<ModelComponent> pending;
  bool ended = false;
  for (const Call& c : p.calls) {
    zt_status s = ZT_OK;
    switch (c.op) {
      case kAddDense:
      case kAddDenseExact:
        s = zt_writer_add_dense(w, c_str(c.name), c_str(c.dtype), c.shape.data(), c.shape.size(),
                                c.data.data(), c.data.size(), c_str(c.encoding));
        if (s == ZT_OK)
          res.objects.push_back(
              ModelObject{*c.name, "dense", c.shape, {ModelComponent{"data", *c.dtype, c.data}}});
        break;
      case kBeginObject:
        s = zt_writer_begin_object(w, c_str(c.name), c_str(c.format), c.shape.data(),
                                   c.shape.size());
        if (s == ZT_OK) current = ModelObject{*c.name, *c.format, c.shape, {}};
        break;
      case kAddComponent:
        s = zt_writer_add_component(w, c_str(c.name), c_str(c.dtype), c_str(c.type), c.data.data(),
                                    c.data.size(), c_str(c.encoding));
        if (s == ZT_OK) {
          FUZZ_CHECK(current.has_value(), "zt_writer_add_component succeeded outside an object");
          current->components.push_back(ModelComponent{*c.name, *c.dtype, c.data});
        }
        break;
      case kEndObject:
        s = zt_writer_end_object(w);
        if (s == ZT_OK) {
          FUZZ_CHECK(current.has_value() && !pending,
                     "zt_writer_end_object succeeded without an object");
          res.objects.push_back(std::move(*current));
        }
        // Success commits the object, a rule broken drops it; a call out of
        // place (ZT_ERR_STATE) leaves the state as it was.
        if (s != ZT_ERR_STATE) current.reset();
        break;
      case kBeginComponent:
        s = zt_writer_begin_component(w, c_str(c.name), c_str(c.dtype), c_str(c.type),
                                      c_str(c.encoding), c.decoded_size);
        if (s == ZT_OK) pending = ModelComponent{*c.name, *c.dtype, {}};
        break;
      case kWrite:
        s = zt_writer_write(w, c.data.data(), c.data.size());
        if (s == ZT_OK) {
          FUZZ_CHECK(pending.has_value(), "zt_writer_write succeeded outside a component");
          pending->bytes.insert(pending->bytes.end(), c.data.begin(), c.data.end());
        } else if (s != ZT_ERR_STATE) {
          pending.reset();  // a refused piece drops the component
        }
        break;
      case kEndComponent:
        s = zt_writer_end_component(w);
        if (s == ZT_OK) {
          FUZZ_CHECK(pending.has_value() && current.has_value(),
                     "zt_writer_end_component succeeded without a component");
          current->components.push_back(std::move(*pending));
        }
        if (s != ZT_ERR_STATE) pending.reset();
        break;
      case kFileAttributes:
        s = zt_writer_set_file_attributes_json(w, c_str(c.json));
        break;
      case kObjectAttributes:
        s = zt_writer_set_object_attributes_json(w, c_str(c.json));
        break;
      case kFinish:
        s = zt_writer_finish(w);
        res.finished = s == ZT_OK;
        ended = true;
        break;
      case kAbort:
        zt_writer_abort(w);
        ended = true;
        break;
      case kOps:
        break;
    }
    if (s != ZT_OK) {
      FUZZ_CHECK(s != ZT_ERR_IO && s != ZT_ERR_NOMEM, "writer call failed: " + status_text(s));
      FUZZ_CHECK(zt_last_error()[0] != '\0', std::string("empty message for ") + zt_status_name(s));
    }
    res.statuses.push_back(s);
    if (verbose())
      std::fprintf(stderr, "  call %d: %s %s\n", static_cast<int>(c.op), zt_status_name(s),
                   zt_last_error());
    if (ended) break;
  }
  if (!ended) zt_writer_abort(w);
  if (!res.finished) res.objects.clear();
  return res;
}

// After a run: the directory holds the finished file, or the target as it
// was before; never a temporary file.
void check_directory(const std::string& dir, const RunResult& r, bool preexisting) {
  const std::vector<std::string> names = list_dir(dir);
  std::string listing;
  for (const auto& n : names) listing += n + " ";
  const bool expect_target = r.finished || preexisting;
  FUZZ_CHECK(names.size() == (expect_target ? 1u : 0u) && (!expect_target || names[0] == "t.zt"),
             "directory after the run holds: " + listing);
  if (!r.finished && preexisting) {
    std::vector<uint8_t> now;
    FUZZ_CHECK(read_file(dir + "/t.zt", now) && now == kOldTarget,
               "the target changed although nothing finished");
  }
}

// The finished file: opens, verifies, walks, holds the model.
void check_finished(const std::string& path, const Program& p, const RunResult& r) {
  zt_reader* rd = nullptr;
  const zt_status s = zt_open(path.c_str(), &rd);
  FUZZ_CHECK(s == ZT_OK, "a finished file does not open: " + status_text(s));
  std::unique_ptr<zt_reader, void (*)(zt_reader*)> reader(rd, zt_close);
  uint64_t checked = 0, unchecked = 0;
  const zt_status v = zt_verify(rd, &checked, &unchecked);
  FUZZ_CHECK(v == ZT_OK, "a finished file does not verify: " + status_text(v));
  walk_reader(rd, WalkOptions{});

  FUZZ_CHECK(zt_object_count(rd) == r.objects.size(),
             "the file has " + std::to_string(zt_object_count(rd)) + " objects, " +
                 std::to_string(r.objects.size()) + " were added");
  uint64_t total = 0;
  const bool v2 = p.options.file_version == 2;
  for (size_t k = 0; k < r.objects.size(); ++k) {
    const ModelObject& m = r.objects[k];
    // v2 manifests keep no object order (their maps are sorted): found by name.
    size_t i = k;
    if (v2)
      FUZZ_CHECK(zt_object_find(rd, m.name.c_str(), &i) == ZT_OK,
                 "object " + m.name + " is missing");
    FUZZ_CHECK(zt_object_name(rd, i) == m.name, "object " + std::to_string(i) + " is \"" +
                                                    str(zt_object_name(rd, i)) + "\", not \"" +
                                                    m.name + "\"");
    FUZZ_CHECK(zt_object_format(rd, i) == m.format, "format of " + m.name + " is \"" +
                                                        str(zt_object_format(rd, i)) +
                                                        "\", not \"" + m.format + "\"");
    size_t ndim = 0;
    const uint64_t* shape = zt_object_shape(rd, i, &ndim);
    FUZZ_CHECK(std::vector<uint64_t>(shape, shape + ndim) == m.shape, "shape of " + m.name);
    FUZZ_CHECK(zt_component_count(rd, i) == m.components.size(), "component count of " + m.name);
    for (const ModelComponent& c : m.components) {
      ++total;
      // v2 stores bool as u8 with type "bool".
      const std::string dtype = v2 && c.dtype == "bool" ? "u8" : c.dtype;
      FUZZ_CHECK(str(zt_component_dtype(rd, i, c.role.c_str())) == dtype,
                 "dtype of " + m.name + "/" + c.role);
      const void* data = nullptr;
      uint64_t n = 0;
      FUZZ_CHECK(zt_component_map(rd, i, c.role.c_str(), &data, &n) == ZT_OK,
                 "map " + m.name + "/" + c.role);
      FUZZ_CHECK(n == c.bytes.size() && (n == 0 || std::memcmp(data, c.bytes.data(), n) == 0),
                 "the bytes of " + m.name + "/" + c.role + " differ from those written");
    }
  }
  if (p.options.digest == ZT_DIGEST_NONE)
    FUZZ_CHECK(checked == 0 && unchecked == total, "digests where none were asked for");
  else
    FUZZ_CHECK(checked == total && unchecked == 0, "a component without a digest");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  const Program p = Decoder(in).program();

  const std::string d1 = scratch_dir() + "/w1", d2 = scratch_dir() + "/w2";
  ::mkdir(d1.c_str(), 0700);
  ::mkdir(d2.c_str(), 0700);
  remove_all_in(d1);
  remove_all_in(d2);

  const RunResult r1 = run(p, d1, 1);
  const RunResult r2 = run(p, d2, 2);
  FUZZ_CHECK(r1.statuses == r2.statuses, "the same calls gave different statuses on a second run");
  check_directory(d1, r1, p.preexisting_target);
  check_directory(d2, r2, p.preexisting_target);
  if (r1.finished) {
    std::vector<uint8_t> b1, b2;
    FUZZ_CHECK(read_file(d1 + "/t.zt", b1) && read_file(d2 + "/t.zt", b2),
               "cannot read the written files");
    FUZZ_CHECK(b1 == b2, "the same calls wrote different bytes (" + std::to_string(b1.size()) +
                             " vs " + std::to_string(b2.size()) + ")");
    check_finished(d1 + "/t.zt", p, r1);
  }
  remove_all_in(d1);
  remove_all_in(d2);
  return 0;
}
