// The object-format descriptors (src/formats): the table is consistent
// (every role a descriptor names is one of its required components, every
// known format has both decoders, which for an opaque or not yet decoded
// v2 profile refuse), lookups go through it (1.x by name, v2 by layout id,
// a v2-only name never reaching a 1.x file), and a
// format the library does not know is listed and mapped but never decoded,
// whatever components it has (it used to reach dequantisation).
#include "manifest/object_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "read/reader.h"
#include "test_files.h"
#include "views/views.h"

namespace zt::test {
namespace {

bool is_required(const ObjectFormat& f, std::string_view role) {
  return std::find(f.required_roles.begin(), f.required_roles.end(), role) !=
         f.required_roles.end();
}

// A v2 file with one object of layout `layout` whose only part is "other".
Bytes v2_with_other_part(std::string_view layout) {
  FileBuilderV2 b;
  b.object("o", layout, {4}, Json{{"other", b.raw("f32", le(std::vector<float>{1, 2, 3, 4}))}});
  return b.build();
}

TEST(ObjectFormat, EveryDescriptorIsConsistent) {
  std::set<std::string_view> names, ids;
  ASSERT_EQ(object_formats().size(), 9u);
  for (const ObjectFormat* f : object_formats()) {
    SCOPED_TRACE(std::string(f->name));
    EXPECT_TRUE(names.insert(f->name).second) << "two descriptors share a name";
    EXPECT_EQ(find_object_format(f->name), f->v1 ? f : nullptr);
    EXPECT_TRUE(f->v1 || !f->layout_ids.empty()) << "a descriptor no file can name";
    for (const auto id : f->layout_ids) {
      EXPECT_TRUE(ids.insert(id).second) << "two descriptors serve " << id;
      EXPECT_EQ(find_layout_format(id), f);
      EXPECT_EQ(presented_format(id), f->v1 ? std::string(f->name) : std::string(id));
    }
    for (const auto role : f->optional_roles) EXPECT_FALSE(is_required(*f, role)) << role;
    EXPECT_FALSE(f->required_roles.empty());
    for (const auto role : f->index_roles) {
      EXPECT_TRUE(is_required(*f, role)) << role;
      EXPECT_TRUE(is_index_role(*f, role));
    }
    if (!f->value_role.empty()) {
      EXPECT_TRUE(is_required(*f, f->value_role));
    }
    EXPECT_TRUE(is_required(*f, f->listed_role));
    EXPECT_EQ(f->content_needs_whole_components, f->check_content != nullptr);
    EXPECT_EQ(f->content_rules.empty(), f->check_content == nullptr);
    EXPECT_TRUE(f->to_f32.whole && f->to_f32.chunks && f->to_f64.whole && f->to_f64.chunks);
    if (f->sized_by_shape) {
      EXPECT_FALSE(f->value_role.empty());
    }
  }
  EXPECT_EQ(find_object_format("Dense"), nullptr);
  EXPECT_EQ(find_object_format(""), nullptr);
  EXPECT_EQ(find_object_format("sparse"), nullptr);
}

TEST(ObjectFormat, TheNamedDescriptorsAreTheTable) {
  EXPECT_EQ(find_object_format("dense"), &kDenseFormat);
  EXPECT_EQ(find_object_format("sparse_csr"), &kSparseCsrFormat);
  EXPECT_EQ(find_object_format("sparse_coo"), &kSparseCooFormat);
  EXPECT_EQ(find_object_format("quantized_group"), &kQuantizedGroupFormat);
  EXPECT_EQ(find_layout_format("zt.quant_group/1"), &kQuantGroupFormat);
  EXPECT_EQ(find_layout_format("zt.mx/1"), &kMxFormat);
  EXPECT_EQ(find_layout_format("gguf.q4_k/1"), &kGgufFormat);
  EXPECT_EQ(kGgufFormat.layout_ids.size(), 22u);
  EXPECT_EQ(find_layout_format("gguf.f32/1"), nullptr);
  EXPECT_EQ(find_layout_format("quantized_group"), nullptr);
  EXPECT_EQ(presented_format("acme.paged/1"), "acme.paged/1");
  EXPECT_TRUE(is_index_role(kSparseCsrFormat, "indptr"));
  EXPECT_FALSE(is_index_role(kSparseCsrFormat, "coords"));
  EXPECT_FALSE(is_index_role(kDenseFormat, "data"));
}

// An unknown format with the components of a quantized_group: listed,
// mapped, verified, but decoding it names the format instead of reading its
// bytes as packed weights.
TEST(ObjectFormat, AnUnknownFormatIsNeverDecoded) {
  FileBuilder b;
  b.object("q", "my_quantized", {2, 8},
           Json{{"packed_weight", b.raw("i32", le(std::vector<int32_t>{1, 2}))},
                {"scales", b.raw("f32", le(std::vector<float>{1, 1}))},
                {"zeros", b.raw("f32", le(std::vector<float>{0, 0}))}});
  b.manifest["objects"]["q"]["attributes"] =
      Json{{"bits", 4}, {"group_size", 8}, {"packing", "8_per_i32"}};
  const Bytes file = b.build();
  auto r = Reader::open_memory(file);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE((*r)->verify());
  auto m = (*r)->map(0, 0);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size(), 8u);
  std::vector<float> out(16);
  const auto d = decode_object_as<float>(**r, 0, std::span<float>(out));
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().status, Status::unsupported);
  EXPECT_NE(d.error().message.find("\"my_quantized\""), std::string::npos) << d.error().message;
  const auto c = decode_object_chunked<float>(
      **r, 0, 4, [](std::span<const float>) -> Result<void> { return {}; });
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().status, Status::unsupported);
}

// The descriptor's rules run at open: a known format missing a required
// component is refused by name, an unknown one is not checked.
TEST(ObjectFormat, RequiredRolesComeFromTheDescriptor) {
  for (const ObjectFormat* f : object_formats()) {
    for (const auto id : f->layout_ids) {
      EXPECT_TRUE(OpensWith(v2_with_other_part(id), ZT_ERR_INVALID,
                            {"requires component \"" + std::string(f->required_roles[0]) + "\""}))
          << id;
    }
    if (!f->v1) continue;
    FileBuilder b;
    b.object("o", f->name, {4}, Json{{"other", b.raw("f32", le(std::vector<float>{1, 2, 3, 4}))}});
    const Bytes file = b.build();
    auto r = Reader::open_memory(file);
    ASSERT_FALSE(r) << f->name;
    EXPECT_EQ(r.error().status, Status::invalid);
    const std::string want = "requires component \"" + std::string(f->required_roles[0]) + "\"";
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  }
  FileBuilder b;
  b.object("o", "my_format", {4},
           Json{{"other", b.raw("f32", le(std::vector<float>{1, 2, 3, 4}))}});
  const Bytes file = b.build();
  EXPECT_TRUE(Reader::open_memory(file));
  EXPECT_TRUE(OpensWith(v2_with_other_part("acme.paged/1"), ZT_OK));
}

// A 1.2 file naming a v2-only descriptor is an unknown format: listed, its
// components served, nothing checked.
TEST(ObjectFormat, AV2OnlyNameIsUnknownIn12) {
  for (const ObjectFormat* f : object_formats()) {
    if (f->v1) continue;
    FileBuilder b;
    b.object("o", f->name, {4}, Json{{"other", b.raw("u8", pattern(3))}});
    const Bytes file = b.build();
    const Opened o = open_memory(file);
    ASSERT_EQ(o.status, ZT_OK) << f->name << ": " << o.error;
    EXPECT_EQ(zt_verify(o.get(), nullptr, nullptr), ZT_OK) << zt_last_error();
  }
}

// An opaque (gguf) or not yet decoded (zt.mx/1) profile is listed, checked
// and mapped, and decoding it to dense names its layout.
TEST(ObjectFormat, V2ProfilesWithoutDecodersRefuseToDecode) {
  FileBuilderV2 b;
  b.object("g", "gguf.q8_0/1", {32}, Json{{"data", b.raw("u8", pattern(34))}});
  b.manifest["objects"]["g"]["attributes"] = Json{{"elems_per_block", 32}, {"block_bytes", 34}};
  const Bytes file = b.build();
  auto r = Reader::open_memory(file);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE((*r)->verify());
  EXPECT_TRUE((*r)->map(0, 0));
  std::vector<float> out(32);
  const auto d = decode_object_as<float>(**r, 0, std::span<float>(out));
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().status, Status::unsupported);
  EXPECT_NE(d.error().message.find("layout \"gguf.q8_0/1\" is not decoded"), std::string::npos)
      << d.error().message;
  const auto c = decode_object_chunked<double>(
      **r, 0, 8, [](std::span<const double>) -> Result<void> { return {}; });
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().status, Status::unsupported);
}

}  // namespace
}  // namespace zt::test
