// Regression tests of what fuzzing found in the foreign-format readers
// (fuzz/README.md, findings F6 and F7). The readers promise that what they
// return can go straight to zt::Writer (src/foreign/foreign.h), and that a
// corrupt file is ZT_ERR_FORMAT / ZT_ERR_INVALID, not an I/O error.
#include <cstring>
#include <string>

#include "foreign/foreign.h"
#include "hardening_support.h"
#include "manifest/json.h"
#include "write/writer.h"

namespace zt::hardening {
namespace {

using foreign::ForeignFile;

// Either the reader refuses the file as invalid, or the writer takes all
// of it (as `zt convert` would).
testing::AssertionResult ConvertsOrIsRefused(const std::string& path, const std::string& out) {
  auto f = foreign::read_foreign(path);
  if (!f) {
    if (f.error().status == Status::invalid || f.error().status == Status::format ||
        f.error().status == Status::unsupported)
      return testing::AssertionSuccess();
    return testing::AssertionFailure() << "refused with status " << static_cast<int>(f.error().status) << ": "
                                       << f.error().message;
  }
  auto w = Writer::open(out);
  if (!w) return testing::AssertionFailure() << w.error().message;
  for (const foreign::ForeignObject& o : f->objects) {
    Result<void> r = (*w)->begin_object(o.name, o.format, o.shape);
    for (const foreign::ForeignComponent& c : o.components)
      if (r) r = (*w)->add_component(c.role, dtype_name(c.dtype), c.type, c.bytes, "raw");
    if (r) r = (*w)->end_object();
    if (!r)
      return testing::AssertionFailure() << "the reader returned what the writer refuses: " << r.error().message;
  }
  if (auto r = (*w)->finish(); !r) return testing::AssertionFailure() << r.error().message;
  return testing::AssertionSuccess();
}

Bytes safetensors(const std::string& header_json, const Bytes& data) {
  std::string h = header_json;
  h.resize((h.size() + 7) / 8 * 8, ' ');
  Bytes out;
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out.push_back(static_cast<uint8_t>(n & 0xFF));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

class ForeignFindings : public testing::Test {
 protected:
  testing::AssertionResult Check(const std::string& name, const Bytes& bytes) {
    write_file(dir.file(name), bytes);
    return ConvertsOrIsRefused(dir.file(name), dir.file("out.zt"));
  }
  ScratchDir dir;
};

// F6: a safetensors BOOL tensor holding a byte other than 0 and 1.
TEST_F(ForeignFindings, F6_SafetensorsBoolBytes) {
  EXPECT_TRUE(Check("b.safetensors",
                    safetensors(R"({"z": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}})", {0, 0x11})));
}

// F6: a tensor name with a NUL byte (JSON "\u0000").
TEST_F(ForeignFindings, F6_SafetensorsNameWithNul) {
  EXPECT_TRUE(Check("n.safetensors",
                    safetensors(R"({"a\u0000b": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", {7})));
}

// F6: an npy bool array holding a 7.
TEST_F(ForeignFindings, F6_NpyBoolBytes) {
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }";
  header.resize(128 - 10 - 1, ' ');  // as numpy writes it: data at 128
  header += '\n';
  Bytes file = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()), 0};
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), {0, 7});
  EXPECT_TRUE(Check("b.npy", file));
}

// F6: a GGUF tensor name with a NUL byte (GGUF strings carry a length).
TEST_F(ForeignFindings, F6_GgufNameWithNul) {
  Bytes f = {'G', 'G', 'U', 'F'};
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i, v >>= 8) f.push_back(static_cast<uint8_t>(v & 0xFF));
  };
  auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) f.push_back(static_cast<uint8_t>(v & 0xFF));
  };
  u32(3);  // version
  u64(1);  // tensors
  u64(0);  // metadata key/values
  u64(3);  // name length
  f.insert(f.end(), {'a', 0, 'b'});
  u32(1);  // dimensions
  u64(2);
  u32(0);  // F32
  u64(0);  // offset in the data area
  f.resize((f.size() + 31) / 32 * 32, 0);
  const float values[2] = {1, 2};
  const auto* p = reinterpret_cast<const uint8_t*>(values);
  f.insert(f.end(), p, p + sizeof values);
  EXPECT_TRUE(Check("n.gguf", f));
}

// F7: an .npz whose central directory is corrupt is a format error.
TEST_F(ForeignFindings, F7_CorruptNpzIsAFormatError) {
  auto f = foreign::read_foreign(ZT_HARDENING_DATA "/F7_corrupt_central_directory.npz");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(static_cast<int>(f.error().status), static_cast<int>(Status::format)) << f.error().message;
}

}  // namespace
}  // namespace zt::hardening
