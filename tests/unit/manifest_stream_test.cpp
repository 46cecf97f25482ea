// decode_manifest parses the objects of a 1.x manifest while the CBOR is
// decoded and drops their nodes. It must give exactly what decoding the
// whole tape and then parsing it gives: the same manifest, or the same
// status and message, on every file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "container/container.h"
#include "manifest/json.h"
#include "manifest/manifest.h"
#include "sanitized.h"
#include "source/io.h"
#include "test_files.h"

namespace zt::test {
namespace {

struct Outcome {
  Status status = Status::ok;
  std::string text;  // the error message, or the manifest as JSON
  uint32_t tape_nodes = 0;
};

Outcome outcome_of(const Result<Manifest>& m) {
  if (!m) return {m.error().status, m.error().message, 0};
  return {Status::ok, manifest_to_json(*m), m->decoded_nodes};
}

Outcome whole_tape(Generation gen, std::span<const uint8_t> bytes) {
  auto doc = cbor::decode(bytes);
  if (!doc) return {doc.error().status, doc.error().message, 0};
  return outcome_of(parse_manifest(gen, std::move(*doc)));
}

Outcome streamed(Generation gen, std::span<const uint8_t> bytes) {
  return outcome_of(decode_manifest(gen, bytes));
}

void expect_same(std::span<const uint8_t> manifest, const std::string& what) {
  const Outcome a = whole_tape(Generation::v1, manifest);
  const Outcome b = streamed(Generation::v1, manifest);
  EXPECT_EQ(a.status, b.status) << what;
  EXPECT_EQ(a.text, b.text) << what;
}

Bytes manifest_cbor(const Json& manifest) {
  return cbor(manifest);
}

Json dense_object(uint64_t offset, std::string_view dtype = "f32") {
  return Json{{"shape", {1}},
              {"format", "dense"},
              {"components", {{"data", {{"dtype", dtype}, {"offset", offset}, {"length", 4}}}}}};
}

// Every 1.x manifest among the conformance vectors and the fuzz corpus.
TEST(ManifestStream, SameResultAsTheWholeTapeOnEveryCorpusFile) {
  size_t compared = 0;
  for (const char* dir : {ZT_TEST_CORPUS "/valid", ZT_TEST_CORPUS "/reject", ZT_TEST_FUZZ_CORPUS}) {
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const Source src = Source::from_memory(file);
      std::vector<uint8_t> storage;
      const auto loc = locate_manifest(src, storage);
      if (!loc || loc->generation != Generation::v1) continue;
      expect_same(loc->manifest, entry.path().string());
      ++compared;
      // And variants: cut short, and single bytes changed (a small
      // differential fuzz of the two paths, the same every run).
      const Bytes m(loc->manifest.begin(), loc->manifest.end());
      if (m.empty()) continue;
      // Under a sanitizer (a Debug build, 20 times slower) every fourth point.
      const size_t step = test::kSanitized ? 4 : 1;
      for (size_t k = step; k <= 16; k += step) {
        const size_t at = m.size() * k / 17;
        expect_same(std::span(m).first(at),
                    entry.path().string() + " cut at " + std::to_string(at));
        for (const uint8_t v :
             {uint8_t{0x00}, uint8_t{0xFF}, uint8_t(m[at] ^ 0x01), uint8_t(m[at] + 0x20)}) {
          Bytes changed = m;
          changed[at] = v;
          expect_same(changed, entry.path().string() + " byte " + std::to_string(at));
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, test::kSanitized ? 1250u : 5000u);
}

TEST(ManifestStream, DropsTheNodesOfObjectsWithoutAttributes) {
  Json m = {{"objects", Json::object()}, {"version", "1.2.0"}};
  for (int i = 0; i < 1000; ++i) m["objects"][numbered("w", i)] = dense_object(64 * (i + 1));
  const Bytes bytes = manifest_cbor(m);
  const Outcome a = whole_tape(Generation::v1, bytes);
  const Outcome b = streamed(Generation::v1, bytes);
  ASSERT_EQ(b.status, Status::ok) << b.text;
  EXPECT_EQ(a.text, b.text);
  EXPECT_GT(a.tape_nodes, 15000u);
  // The root map, its two keys, the version and the (empty) objects map.
  EXPECT_EQ(b.tape_nodes, 5u);
}

// manifest_policy: unknown fields never become nodes, and what the model
// reads as a scalar or a bounded list is refused by its kind or count
// without its items becoming nodes; the messages are those of the whole
// tape.
TEST(ManifestStream, UnknownFieldsAreSkippedNotBuilt) {
  Json m = {{"objects", {{"w", dense_object(64)}}}, {"version", "1.2.0"}};
  const Outcome plain = streamed(Generation::v1, manifest_cbor(m));
  Json big = Json::array();
  for (int i = 0; i < 5000; ++i) big.push_back(i);
  m["zz_root"] = big;
  m["objects"]["w"]["zz_object"] = big;
  m["objects"]["w"]["components"]["data"]["zz_component"] = {{"x", big}};
  const Bytes bytes = manifest_cbor(m);
  expect_same(bytes, "unknown fields");
  const Outcome b = streamed(Generation::v1, bytes);
  ASSERT_EQ(b.status, Status::ok) << b.text;
  EXPECT_EQ(b.text, plain.text);
  EXPECT_EQ(b.tape_nodes, 5u);  // as without them
}

TEST(ManifestStream, OversizedFieldsAreRefusedByTheirCount) {
  Json shape = Json::array();
  for (int i = 0; i < 100; ++i) shape.push_back(1);
  Json m = {{"objects", {{"w", dense_object(64)}}}, {"version", "1.2.0"}};
  m["objects"]["w"]["shape"] = shape;
  expect_same(manifest_cbor(m), "long shape");
  EXPECT_NE(streamed(Generation::v1, manifest_cbor(m)).text.find("shape has 100 dimensions, more than the limit 64"),
            std::string::npos);

  Json comps = Json::object();
  for (int i = 0; i < 2000; ++i) comps[numbered("c", i)] = {{"dtype", "u8"}, {"offset", 64}, {"length", 1}};
  m = {{"objects", {{"w", dense_object(64)}}}, {"version", "1.2.0"}};
  m["objects"]["w"]["components"] = comps;
  expect_same(manifest_cbor(m), "many components");
  const Outcome c = streamed(Generation::v1, manifest_cbor(m));
  EXPECT_EQ(c.status, Status::limit);
  EXPECT_NE(c.text.find("has 2000 components, more than the limit 1024"), std::string::npos) << c.text;

  // Without a count to refuse by, an indefinite-length shape is refused by
  // the decoder at its 65th item, before the rest become nodes: the one
  // place where the policy's message differs from the whole tape's (whose
  // parser counts all 100), the status being the same.
  m = {{"objects", {{"w", dense_object(64)}}}, {"version", "1.2.0"}};
  m["objects"]["w"]["shape"] = {1};
  Bytes indefinite = manifest_cbor(m);
  const uint8_t one_item_shape[] = {0x65, 's', 'h', 'a', 'p', 'e', 0x81, 0x01};
  const auto at = std::search(indefinite.begin(), indefinite.end(), std::begin(one_item_shape),
                              std::end(one_item_shape));
  ASSERT_NE(at, indefinite.end());
  Bytes items = {0x9F};
  items.insert(items.end(), 100, 0x01);
  items.push_back(0xFF);
  const auto value = (at - indefinite.begin()) + 6;  // the shape's [1]
  indefinite.erase(indefinite.begin() + value, indefinite.begin() + value + 2);
  indefinite.insert(indefinite.begin() + value, items.begin(), items.end());
  EXPECT_EQ(whole_tape(Generation::v1, indefinite).status, Status::limit);
  const Outcome d = streamed(Generation::v1, indefinite);
  EXPECT_EQ(d.status, Status::limit);
  EXPECT_NE(d.text.find("\"shape\" holds more items than the limit of 64"), std::string::npos)
      << d.text;

  m = {{"objects", {{"w", dense_object(64)}}}, {"version", "1.2.0"}};
  m["objects"]["w"]["format"] = {{"x", shape}};
  m["attributes"] = shape;
  expect_same(manifest_cbor(m), "containers where scalars and maps belong");
  EXPECT_EQ(streamed(Generation::v1, manifest_cbor(m)).status, Status::invalid);
}

TEST(ManifestStream, FindsEveryObjectByName) {
  Json m = {{"objects", Json::object()}, {"version", "1.2.0"}};
  for (int i = 0; i < 3000; ++i)
    m["objects"][numbered("layer.", i)] = dense_object(64 * (i + 1));
  const auto man = decode_manifest(Generation::v1, manifest_cbor(m));
  ASSERT_TRUE(man) << man.error().message;
  ASSERT_EQ(man->objects.size(), 3000u);
  for (size_t i = 0; i < man->objects.size(); ++i) {
    const auto found = man->find(man->objects[i].name);
    ASSERT_TRUE(found) << man->objects[i].name;
    EXPECT_EQ(*found, i);
  }
  for (const char* absent : {"", "layer.", "layer.3000", "layer.-1", "layer.10 "})
    EXPECT_FALSE(man->find(absent));
}

// 0.1.0 lists its tensors in an array: the index finds duplicate names.
TEST(ManifestStream, LegacyDuplicateNamesAreRefused) {
  const Json entry = {{"name", "a"},        {"offset", 64}, {"size", 4},
                      {"dtype", "float32"}, {"shape", {1}}, {"encoding", "raw"}};
  Json b = entry;
  b["name"] = "b";
  const auto ok = decode_manifest(Generation::v0_1, cbor(Json{entry, b}));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->find("b"), std::optional<size_t>(1));
  const auto dup = decode_manifest(Generation::v0_1, cbor(Json{entry, b, entry}));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().status, Status::invalid);
  EXPECT_EQ(dup.error().message, "duplicate object name \"a\"");
}

TEST(ManifestStream, KeepsObjectAttributesAsTheirBytes) {
  Json m = {{"objects", Json::object()}, {"version", "1.2.0"}};
  for (int i = 0; i < 50; ++i) {
    Json o = dense_object(64 * (i + 1));
    if (i % 3 == 0) o["attributes"] = {{"layer", i}, {"tags", {"a", "b"}}, {"scale", {{"x", 0.5}}}};
    m["objects"][numbered("w", i)] = o;
  }
  m["attributes"] = {{"model", "test"}};
  const Bytes bytes = manifest_cbor(m);
  expect_same(bytes, "attributes on every third object");
  const auto man = decode_manifest(Generation::v1, bytes);
  ASSERT_TRUE(man);
  EXPECT_LT(man->decoded_nodes, whole_tape(Generation::v1, bytes).tape_nodes);
  const auto i = man->find("w3");
  ASSERT_TRUE(i);
  EXPECT_EQ(attributes_json(man->objects[*i].attributes),
            R"({"layer":3,"tags":["a","b"],"scale":{"x":0.5}})");
}

TEST(ManifestStream, IndefiniteLengthMapsAndStrings) {
  Json m = {{"objects", Json::object()}, {"version", "1.2.0"}};
  for (int i = 0; i < 20; ++i) m["objects"][numbered("w", i)] = dense_object(64 * (i + 1));
  m["objects"]["w7"]["attributes"] = {{"k", "v"}};
  expect_same(cbor_indefinite(m), "indefinite");
  const auto man = decode_manifest(Generation::v1, cbor_indefinite(m));
  ASSERT_TRUE(man) << man.error().message;
  EXPECT_EQ(man->objects.size(), 20u);
}

// "objects" sorts before "version": 1.1 objects are parsed before the
// version is known, and an old dtype name fails as 1.2 would have it.
TEST(ManifestStream, VersionAfterObjectsStillUpgrades11) {
  Json m = {{"objects", {{"a", dense_object(64)}, {"c", dense_object(128, "complex64")}}},
            {"version", "1.1.0"}};
  m["objects"]["c"]["components"]["data"]["length"] = 8;
  const Bytes bytes = manifest_cbor(m);
  expect_same(bytes, "1.1 complex64");
  const auto man = decode_manifest(Generation::v1, bytes);
  ASSERT_TRUE(man) << man.error().message;
  const Component& c = man->objects[*man->find("c")].components[0];
  EXPECT_EQ(c.dtype, DType::f32);
  ASSERT_TRUE(c.type);
  EXPECT_EQ(*c.type, "complex64");

  // zstd without uncompressed_length: allowed in 1.1, refused in 1.2.
  Json z = {{"objects", {{"z", dense_object(64)}}}, {"version", "1.1.0"}};
  z["objects"]["z"]["components"]["data"]["encoding"] = "zstd";
  expect_same(manifest_cbor(z), "1.1 zstd");
  EXPECT_TRUE(decode_manifest(Generation::v1, manifest_cbor(z)));
  z["version"] = "1.2.0";
  expect_same(manifest_cbor(z), "1.2 zstd");
  const auto refused = decode_manifest(Generation::v1, manifest_cbor(z));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().status, Status::invalid);
}

// Errors keep their order: CBOR errors before the header's, the header's
// before an object's, the first object's before later ones.
TEST(ManifestStream, ErrorsComeInTheSameOrder) {
  Json bad_object = {{"objects", {{"a", dense_object(64)}, {"b", {{"shape", "x"}}}, {"c", 5}}},
                     {"version", "1.2.0"}};
  expect_same(manifest_cbor(bad_object), "bad object");
  EXPECT_NE(streamed(Generation::v1, manifest_cbor(bad_object)).text.find("\"b\""),
            std::string::npos);

  // A CBOR error after a bad object: format, not the object's error.
  Bytes trailing = manifest_cbor(bad_object);
  trailing.push_back(0x00);
  expect_same(trailing, "trailing byte");
  EXPECT_EQ(streamed(Generation::v1, trailing).status, Status::format);
  Bytes truncated = manifest_cbor(bad_object);
  truncated.pop_back();
  expect_same(truncated, "truncated");

  // The version is checked before the objects.
  Json bad_version = bad_object;
  bad_version["version"] = "2.0.0";
  expect_same(manifest_cbor(bad_version), "major 2");
  EXPECT_EQ(streamed(Generation::v1, manifest_cbor(bad_version)).status, Status::unsupported);
  Json no_version = {{"objects", {{"b", {{"shape", "x"}}}}}};
  expect_same(manifest_cbor(no_version), "no version");

  // Duplicate object names are a CBOR error (duplicate map key), even after
  // a bad object.
  const Bytes dup = cat(
      {Bytes{0xA2}, cbor_text("objects"), Bytes{0xA3}, cbor_text("b"),
       manifest_cbor(Json{{"shape", "x"}}), cbor_text("a"), manifest_cbor(dense_object(64)),
       cbor_text("a"), manifest_cbor(dense_object(128)), cbor_text("version"), cbor_text("1.2.0")});
  expect_same(dup, "duplicate name");
  const Outcome d = streamed(Generation::v1, dup);
  EXPECT_EQ(d.status, Status::format);
  EXPECT_NE(d.text.find("duplicate map key \"a\""), std::string::npos) << d.text;

  // "objects" twice at the top: the second is not streamed; the duplicate
  // key is the error.
  const Bytes twice =
      cat({Bytes{0xA3}, cbor_text("objects"), manifest_cbor(Json{{"a", dense_object(64)}}),
           cbor_text("objects"), manifest_cbor(Json{{"b", dense_object(64)}}), cbor_text("version"),
           cbor_text("1.2.0")});
  expect_same(twice, "objects twice");
  EXPECT_EQ(streamed(Generation::v1, twice).status, Status::format);

  // "objects" that is not a map, and maps nested under other keys.
  expect_same(manifest_cbor(Json{{"objects", {1, 2}}, {"version", "1.2.0"}}), "objects array");
  expect_same(manifest_cbor(Json{{"attributes", {{"objects", {{"a", 1}}}}},
                                 {"objects", Json::object()},
                                 {"version", "1.2.0"}}),
              "objects key inside attributes");
}

// The index by name: grown from empty (each growth places the entries by
// the hash bits it kept, not by hashing the names again) or reserved, every
// name is found where it is, a second object of a name is refused, and a
// name that is not there is not found, also among names that share slots.
TEST(NameIndex, FindsEveryNameAfterGrowingAndRefusesASecondOfOne) {
  for (const bool reserved : {false, true}) {
    SCOPED_TRACE(reserved ? "reserved" : "grown");
    std::vector<Object> objects(5000);
    NameIndex index;
    if (reserved) index.reserve(objects.size());
    for (uint32_t i = 0; i < objects.size(); ++i) {
      objects[i].name = "model.layers." + std::to_string(i) + ".weight";
      ASSERT_TRUE(index.insert(i, objects)) << objects[i].name;
    }
    for (uint32_t i = 0; i < objects.size(); ++i)
      ASSERT_EQ(index.find(objects[i].name, objects), std::optional<size_t>(i));
    objects.push_back(Object{});
    objects.back().name = "model.layers.17.weight";
    EXPECT_FALSE(index.insert(static_cast<uint32_t>(objects.size() - 1), objects));
    EXPECT_EQ(index.find("model.layers.17.weight", objects), std::optional<size_t>(17));
    for (const char* absent : {"", "model.layers.5000.weight", "model.layers.17.weigh"})
      EXPECT_EQ(index.find(absent, objects), std::nullopt) << absent;
  }
  EXPECT_EQ(NameIndex{}.find("x", {}), std::nullopt);
}

}  // namespace
}  // namespace zt::test
