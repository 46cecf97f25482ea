// The C++ wrapper (include/ztensor.hpp) over the shared library: round trips
// through ztensor::Writer and ztensor::Reader, zero-copy spans, typed access
// and its refusals, errors as ztensor::Error with status and message, and
// RAII (an unfinished writer leaves nothing behind, moved-from handles are
// empty). Linked with libztensor.so only: no core header is reachable here.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <ztensor.hpp>

#include "huge_pages.h"

namespace {

namespace fs = std::filesystem;

class WrapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zt-cpp-wrapper-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path path(const std::string& name = "t.zt") const { return dir_ / name; }

  static std::vector<std::byte> slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(f)), {});
    std::vector<std::byte> b(c.size());
    if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
    return b;
  }

  // A file with one of each kind the tests below look at.
  fs::path write_sample() {
    const fs::path p = path();
    ztensor::Writer w(p);
    const std::vector<float> weights{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
    const std::vector<std::int64_t> ids{-1, 0, 1LL << 40};
    std::vector<std::uint16_t> ramp(4096);
    for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<std::uint16_t>(i % 7);
    w.add_dense("w", weights, {2, 3});
    w.add_dense("ids", ids, {3});
    w.add_dense("ramp", ramp, {64, 64}, "zstd");
    w.set_file_attributes_json(R"({"framework": "test"})");
    w.finish();
    return p;
  }

  fs::path dir_;
};

TEST_F(WrapperTest, RoundTripKeepsNamesShapesTypesAndValues) {
  ztensor::Reader r(write_sample());

  EXPECT_EQ(r.file_version(), "1.2.0");
  EXPECT_THROW(r.content_digest(), ztensor::Error);  // a v2 model's identity only
  ASSERT_EQ(r.size(), 3u);
  std::vector<std::string> names;
  for (ztensor::Object o : r) names.emplace_back(o.name());
  EXPECT_EQ(names, (std::vector<std::string>{"w", "ids", "ramp"}));

  const ztensor::Object w = r["w"];
  EXPECT_EQ(w.format(), "dense");
  EXPECT_EQ(w.layout(), "dense");  // a 1.x format is its own layout
  EXPECT_FALSE(w.data().encoding_id().has_value());
  EXPECT_FALSE(w.data().shard().has_value());
  EXPECT_EQ(std::vector<std::uint64_t>(w.shape().begin(), w.shape().end()),
            (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(w.element_count(), 6u);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].role(), "data");
  EXPECT_EQ(w.data().dtype(), "f32");
  EXPECT_FALSE(w.data().type().has_value());
  EXPECT_EQ(w.data().encoding(), "raw");
  const std::span<const float> wv = w.data().as<float>();
  EXPECT_EQ(std::vector<float>(wv.begin(), wv.end()),
            (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f}));

  const std::span<const std::int64_t> ids = r["ids"].data().as<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(ids.begin(), ids.end()),
            (std::vector<std::int64_t>{-1, 0, 1LL << 40}));

  const ztensor::Component ramp = r["ramp"].data();
  EXPECT_EQ(ramp.encoding(), "zstd");
  EXPECT_FALSE(ramp.encoding_id().has_value());  // 1.x names no encoding profile
  EXPECT_EQ(ramp.decoded_size(), std::optional<std::uint64_t>(4096 * 2));
  EXPECT_LT(ramp.stored_size(), 4096u * 2);
  const std::optional<ztensor::Component::Extent> at = ramp.extent();
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->nbytes, ramp.stored_size());
  EXPECT_EQ(at->offset % 64, 0u);
  EXPECT_GT(at->offset, w.data().extent()->offset);  // written after w
  const std::vector<std::uint16_t> copy = ramp.read_as<std::uint16_t>();
  const std::span<const std::uint16_t> cached = ramp.as<std::uint16_t>();
  ASSERT_EQ(copy.size(), 4096u);
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), cached.begin(), cached.end()));
  EXPECT_EQ(copy[4095], 4095 % 7);

  EXPECT_NE(r.manifest_json().find(R"("framework":"test")"), std::string_view::npos)
      << r.manifest_json();
  const ztensor::VerifyResult v = r.verify();
  EXPECT_EQ(v.checked, 3u);
  EXPECT_EQ(v.unchecked, 0u);
}

TEST_F(WrapperTest, CborAttributesRoundTripByteForByte) {
  // {"nan": NaN as a half float, "b": h'00ff'}: neither survives JSON text.
  const std::vector<std::byte> attrs = {
      std::byte{0xA2}, std::byte{0x63}, std::byte{'n'},  std::byte{'a'},  std::byte{'n'},
      std::byte{0xF9}, std::byte{0x7E}, std::byte{0x00}, std::byte{0x61}, std::byte{'b'},
      std::byte{0x42}, std::byte{0x00}, std::byte{0xFF}};
  const std::vector<std::uint8_t> one{1};
  {
    ztensor::Writer w(path());
    w.set_file_attributes_cbor(attrs);
    w.add_dense("x", one, {1});
    w.finish();
  }
  ztensor::Reader r(path());
  const std::span<const std::byte> got = r.attributes_cbor();
  EXPECT_TRUE(std::equal(got.begin(), got.end(), attrs.begin(), attrs.end()));
  EXPECT_TRUE(r["x"].attributes_cbor().empty());
  ztensor::Writer bad(path("t2.zt"));
  EXPECT_THROW(bad.set_file_attributes_cbor(std::span<const std::byte>(attrs).first(5)),
               ztensor::Error);
}

TEST_F(WrapperTest, RawDataIsAViewOfTheCallersMemoryNotACopy) {
  const std::vector<std::byte> file = slurp(write_sample());
  ztensor::Reader r = ztensor::Reader::from_memory(file);
  const std::span<const std::byte> data = r["w"].data().bytes();
  ASSERT_EQ(data.size(), 6 * sizeof(float));
  EXPECT_GE(data.data(), file.data());
  EXPECT_LE(data.data() + data.size(), file.data() + file.size());
  EXPECT_EQ(static_cast<std::size_t>(data.data() - file.data()) % 64, 0u);
}

// A device whose copies happen only when waited for: a staging buffer
// refilled before its copies were waited on would deliver wrong bytes.
struct LateDevice {
  std::vector<std::vector<std::byte>> memory;
  struct Copy {
    std::size_t item;
    std::uint64_t offset;
    std::span<std::byte> bytes;
  };
  std::vector<Copy> queue;
  std::size_t done = 0;
  void copy(std::size_t item, std::uint64_t offset, std::span<std::byte> bytes) {
    queue.push_back({item, offset, bytes});
  }
  std::size_t fence() const { return queue.size(); }
  void wait(std::size_t token) {
    for (; done < token; ++done) {
      const Copy& c = queue[done];
      std::memcpy(memory[c.item].data() + c.offset, c.bytes.data(), c.bytes.size());
    }
  }
};

// The threads "all cores" means: never more than the affinity mask allows
// (hardware_concurrency() counts the machine's CPUs whatever the mask).
TEST(WrapperCpuCount, NoMoreThanTheAffinityMask) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  EXPECT_GE(ztensor::cpu_count(), 1u);
  EXPECT_LE(ztensor::cpu_count(), static_cast<unsigned>(CPU_COUNT(&mask)));
}

TEST_F(WrapperTest, LoadStagedFillsEveryItemThroughSmallBuffers) {
  ztensor::Reader r(write_sample());
  std::vector<ztensor::StagedItem> items;
  std::vector<std::span<const std::byte>> want;
  for (const char* name : {"ramp", "w", "ids"}) {
    want.push_back(r[name].data().bytes());  // ramp: zstd, 8 KiB decoded
    items.push_back({r[name].index(), "data", want.back().size()});
  }
  for (std::size_t count : {1u, 2u, 3u}) {
    std::vector<std::vector<std::byte>> storage(count, std::vector<std::byte>(100));
    std::vector<std::span<std::byte>> buffers(storage.begin(), storage.end());
    LateDevice device;
    for (const auto& w : want) device.memory.emplace_back(w.size(), std::byte{0xEE});
    ztensor::load_staged(r, items, buffers, device);
    EXPECT_GT(device.queue.size(), 80u);          // 8 KiB through 100-byte buffers
    EXPECT_EQ(device.done, device.queue.size());  // every copy waited for
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(std::equal(want[i].begin(), want[i].end(), device.memory[i].begin())) << i;
  }
  // A buffer of no bytes would never move the load on: refused, not spun on.
  std::vector<std::byte> one(100);
  const std::vector<std::span<std::byte>> with_empty{std::span<std::byte>(one),
                                                     std::span<std::byte>()};
  LateDevice device;
  for (const auto& w : want) device.memory.emplace_back(w.size());
  try {
    ztensor::load_staged(r, items, with_empty, device);
    FAIL() << "a staging buffer of 0 bytes";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
}

TEST_F(WrapperTest, DecodeRangesTellsEachRangeAndThrowsTheFirstFailure) {
  ztensor::Reader r(write_sample());
  std::vector<std::byte> a(10), b(4);
  std::vector<ztensor::Reader::Range> ranges{
      {r["ramp"].index(), "data", 8000, a},
      {r["w"].index(), "data", 22, b}};  // 24 bytes: 2 too many
  std::vector<int> told(2, 0);
  std::mutex m;
  try {
    r.decode_ranges(ranges, 0, [&](std::size_t i, zt_status) {
      std::lock_guard<std::mutex> lock(m);
      ++told[i];
    });
    FAIL() << "a range past the end was accepted";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT);
  }
  EXPECT_EQ(told, std::vector<int>({1, 1}));
  const auto ramp = r["ramp"].data().bytes();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), ramp.begin() + 8000));
}

TEST_F(WrapperTest, CopyModeServesTheSameValues) {
  ztensor::Reader r(write_sample(), {.io_mode = ztensor::IoMode::copy});
  const std::span<const float> w = r["w"].data().as<float>();
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[2], 3.25f);
}

TEST_F(WrapperTest, AllowForeignReadsANpyFileThroughTheSameClasses) {
  // A hand-written .npy: format 1.0, a 118-byte header padded to 128 bytes.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  header.resize(128 - 10 - 1, ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  const float values[] = {1.0f, 2.0f, 3.0f, 4.0f};
  npy.append(reinterpret_cast<const char*>(values), sizeof values);
  std::ofstream(path("a.npy"), std::ios::binary) << npy;

  EXPECT_THROW(ztensor::Reader(path("a.npy")), ztensor::Error);
  ztensor::Reader r(path("a.npy"), {.allow_foreign = true});
  EXPECT_EQ(r.file_format(), "npy");
  EXPECT_EQ(r.file_version(), "");
  const std::span<const float> a = r["a"].data().as<float>();
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[3], 4.0f);
}

// A file in memory behind ByteSource, in reads of at most 5 bytes, failing
// (by throwing) while `broken` is set; counts its destruction.
class ChoppyBytes : public ztensor::ByteSource {
 public:
  ChoppyBytes(std::vector<std::byte> bytes, int* destroyed, const bool* broken)
      : bytes_(std::move(bytes)), destroyed_(destroyed), broken_(broken) {}
  ~ChoppyBytes() override { ++*destroyed_; }
  std::uint64_t size() override { return bytes_.size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) override {
    if (*broken_) throw std::runtime_error("disk on fire");
    const std::size_t n = std::min<std::size_t>(out.size(), 5);
    std::memcpy(out.data(), bytes_.data() + offset, n);
    return n;
  }
  std::string name() const override { return "choppy://t.zt"; }

 private:
  std::vector<std::byte> bytes_;
  int* destroyed_;
  const bool* broken_;
};

TEST_F(WrapperTest, ByteSourceReadsThroughShortReadsAndExceptions) {
  const std::vector<std::byte> file = slurp(write_sample());
  int destroyed = 0;
  bool broken = false;
  {
    // A cache of 64 bytes keeps nothing of interest: the file is smaller
    // than the 64 KiB tail a default cache would hold whole.
    ztensor::Reader r =
        ztensor::Reader::from_source(std::make_unique<ChoppyBytes>(file, &destroyed, &broken), 64);
    const std::span<const float> w = r["w"].data().as<float>();
    ASSERT_EQ(w.size(), 6u);
    EXPECT_EQ(w[2], 3.25f);
    EXPECT_EQ(r["ramp"].data().as<std::uint16_t>()[13], 13 % 7);
    broken = true;
    try {
      static_cast<void>(r["ids"].data().bytes());
      ADD_FAILURE() << "a throwing source read succeeded";
    } catch (const ztensor::Error& e) {
      EXPECT_EQ(e.status(), ZT_ERR_IO);
      EXPECT_NE(e.message().find("choppy://t.zt"), std::string::npos) << e.message();
    }
    broken = false;
    EXPECT_EQ(r["ids"].data().as<std::int64_t>()[2], 1LL << 40);  // not remembered
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
  broken = true;  // a failed open still releases the source
  EXPECT_THROW(
      ztensor::Reader::from_source(std::make_unique<ChoppyBytes>(file, &destroyed, &broken)),
      ztensor::Error);
  EXPECT_EQ(destroyed, 2);
}

// A source that is not thread-safe says so, and is called from one thread
// at a time even by a batch on every core.
class OneAtATime final : public ztensor::ByteSource {
 public:
  OneAtATime(std::vector<std::byte> bytes, std::atomic<int>* most)
      : b_(std::move(bytes)), most_(most) {}
  std::uint64_t size() override { return b_.size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) override {
    const int now = ++inside_;
    int seen = most_->load();
    while (now > seen && !most_->compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // room to overlap
    const std::size_t n = std::min<std::size_t>(out.size(), b_.size() - offset);
    std::memcpy(out.data(), b_.data() + offset, n);
    --inside_;
    return n;
  }
  bool concurrent() const override { return false; }

 private:
  std::vector<std::byte> b_;
  std::atomic<int>* most_;
  std::atomic<int> inside_{0};
};

TEST_F(WrapperTest, ASourceThatIsNotThreadSafeIsCalledOneAtATime) {
  const fs::path p = path();
  {
    ztensor::Writer w(p);
    // 2 MiB each: read one by one (small ones go together, in one read).
    for (int i = 0; i < 8; ++i)
      w.add_dense("t" + std::to_string(i), std::vector<float>(524288, static_cast<float>(i)),
                  {524288});
    w.finish();
  }
  std::atomic<int> most{0};
  ztensor::Reader r =
      ztensor::Reader::from_source(std::make_unique<OneAtATime>(slurp(p), &most), 64);
  std::vector<std::vector<std::byte>> out(8, std::vector<std::byte>(size_t{2} << 20));
  std::vector<ztensor::Reader::Range> ranges;
  for (std::size_t i = 0; i < 8; ++i)
    ranges.push_back({r["t" + std::to_string(i)].index(), "data", 0, out[i]});
  r.decode_ranges(ranges, 4);
  EXPECT_EQ(most.load(), 1);
  float last = 0;
  std::memcpy(&last, out[7].data() + (size_t{2} << 20) - 4, 4);
  EXPECT_EQ(last, 7.0f);
}

TEST_F(WrapperTest, PackedF4SparseValuesSpanTheirBytesNotTheirCount) {
  // v2 CSR with three f4_e2m1 values: two bytes, not three (an ArrayView of
  // three would reach past the blob).
  {
    ztensor::Writer w(path("f4.zt"), {.file_version = 2u});
    const std::vector<std::byte> values{std::byte{0x21}, std::byte{0x03}};
    const std::vector<std::uint64_t> indices{0, 1, 3}, indptr{0, 2, 3};
    w.begin_object("s", "sparse_csr", {2, 4})
        .add_component("values", "u8", "f4_e2m1", values)
        .add_component("indices", indices)
        .add_component("indptr", indptr)
        .end_object();
    w.finish();
  }
  const std::vector<std::byte> file = slurp(path("f4.zt"));
  ztensor::Reader r = ztensor::Reader::from_memory(file);
  const ztensor::CsrView csr = r["s"].csr();
  EXPECT_EQ(csr.nnz, 3u);
  EXPECT_EQ(csr.values.bytes().size(), 2u);
  EXPECT_EQ(csr.values.bytes()[1], std::byte{0x03});
  // Converted, the component gives its three values (two a byte, the last
  // nibble padding): a buffer sized by bytes / width held one byte's two.
  // f4_e2m1 codes 1, 2, 3 are 0.5, 1, 1.5.
  const std::vector<float> v = r["s"].component("values").read_f32();
  ASSERT_GE(v.size(), 3u);
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 3), (std::vector<float>{0.5f, 1.0f, 1.5f}));
}

TEST_F(WrapperTest, FromUrlRefusesWhatIsNotHttp) {
  try {
    static_cast<void>(ztensor::Reader::from_url("ftp://example.com/x.zt"));
    ADD_FAILURE() << "an ftp URL opened";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT);
    EXPECT_NE(e.message().find("not an http:// or https:// URL"), std::string::npos);
  }
}

TEST_F(WrapperTest, FromUrlPassesAllowForeign) {
  // With allow_foreign an .npy URL is refused by its format before any
  // request (without it, the open would try the closed port: ZT_ERR_IO).
  ztensor::HttpOptions http;
  http.allow_foreign = true;
  http.retries = 0;
  for (const bool foreign : {true, false}) {
    http.allow_foreign = foreign;
    try {
      static_cast<void>(ztensor::Reader::from_url("http://127.0.0.1:9/x.npy", http));
      ADD_FAILURE() << "opened";
    } catch (const ztensor::Error& e) {
      if (foreign) {
        EXPECT_EQ(e.status(), ZT_ERR_UNSUPPORTED) << e.what();
        EXPECT_NE(e.message().find("read from a local copy"), std::string::npos) << e.what();
      } else {
        EXPECT_EQ(e.status(), ZT_ERR_IO) << e.what();
      }
    }
  }
}

TEST_F(WrapperTest, ErrorsCarryStatusAndMessage) {
  try {
    ztensor::Reader r(path("missing.zt"));
    FAIL() << "opened a file that does not exist";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_IO);
    EXPECT_FALSE(e.message().empty());
    EXPECT_EQ(std::string(e.what()).rfind("ZT_ERR_IO: ", 0), 0u) << e.what();
  }

  std::ofstream(path("junk.zt")) << "this is not a zTensor file at all";
  try {
    ztensor::Reader r(path("junk.zt"));
    FAIL() << "opened junk";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_FORMAT) << e.what();
  }
}

TEST_F(WrapperTest, MissingNamesThrowNotFoundOrGiveNullopt) {
  ztensor::Reader r(write_sample());
  EXPECT_FALSE(r.find("nope").has_value());
  EXPECT_FALSE(r.contains("nope"));
  EXPECT_TRUE(r.contains("w"));
  try {
    (void)r["nope"];
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_NOT_FOUND);
    EXPECT_NE(e.message().find("nope"), std::string::npos) << e.message();
  }
  try {
    (void)r[std::size_t{3}];
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_NOT_FOUND);
  }
  EXPECT_FALSE(r["w"].find("scales").has_value());
  try {
    (void)r["w"].component("scales");
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_NOT_FOUND);
    EXPECT_EQ(e.message(), R"(object "w" has no component "scales")");
  }
}

TEST_F(WrapperTest, TypedAccessRefusesTheWrongElementType) {
  ztensor::Reader r(write_sample());
  try {
    (void)r["w"].data().as<double>();
    FAIL() << "f32 data read as double";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT);
    EXPECT_EQ(e.message(), R"(object "w": component "data": asked for f64 but it is f32)");
  }
  EXPECT_THROW((void)r["ids"].data().read_as<std::uint64_t>(), ztensor::Error);
  EXPECT_THROW((void)r["w"].data().as<std::complex<float>>(), ztensor::Error);
}

TEST_F(WrapperTest, ComplexAndLogicalTypesRoundTrip) {
  const std::vector<std::complex<float>> z{{1, 2}, {-3, 0.5f}};
  const std::vector<std::uint8_t> fp8{0x38, 0xb8, 0x00, 0x40};  // 1, -1, 0, 2 in f8_e4m3fn
  {
    ztensor::Writer w(path());
    w.add_dense("z", std::span<const std::complex<float>>(z), {2});
    w.begin_object("q", "dense", {4})
        .add_component("data", "u8", "f8_e4m3fn", std::as_bytes(std::span(fp8)))
        .end_object();
    w.finish();
  }
  ztensor::Reader r(path());
  const ztensor::Component zc = r["z"].data();
  EXPECT_EQ(zc.dtype(), "f32");
  EXPECT_EQ(zc.type(), std::optional<std::string_view>("complex64"));
  const std::span<const std::complex<float>> zv = zc.as<std::complex<float>>();
  EXPECT_EQ(std::vector<std::complex<float>>(zv.begin(), zv.end()), z);
  EXPECT_EQ(zc.as<float>().size(), 4u);  // the storage view: interleaved pairs

  const ztensor::Component qc = r["q"].data();
  EXPECT_EQ(qc.dtype(), "u8");
  EXPECT_EQ(qc.type(), std::optional<std::string_view>("f8_e4m3fn"));
  const std::span<const std::uint8_t> qv = qc.as<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(qv.begin(), qv.end()), fp8);
}

TEST_F(WrapperTest, SparseObjectsAreWrittenComponentByComponent) {
  // [[1, 0, 2], [0, 0, 3]]
  const std::vector<float> values{1, 2, 3};
  const std::vector<std::uint64_t> indices{0, 2, 2}, indptr{0, 2, 3};
  {
    ztensor::Writer w(path());
    w.begin_object("m", "sparse_csr", {2, 3})
        .add_component("values", values)
        .add_component("indices", indices)
        .add_component("indptr", indptr, "zstd")
        .set_object_attributes_json(R"({"note": "csr"})")
        .end_object();
    w.finish();
  }
  ztensor::Reader r(path());
  const ztensor::Object m = r["m"];
  EXPECT_EQ(m.format(), "sparse_csr");
  std::vector<std::string> roles;
  for (ztensor::Component c : m.components()) roles.emplace_back(c.role());
  EXPECT_EQ(roles, (std::vector<std::string>{"values", "indices", "indptr"}));
  const auto ip = m.component("indptr").as<std::uint64_t>();
  EXPECT_EQ(std::vector<std::uint64_t>(ip.begin(), ip.end()), indptr);
  EXPECT_EQ(m.component("indptr").encoding(), "zstd");
  EXPECT_EQ(r.verify().checked, 3u);
  // At a glance: a sparse object has no "data" component.
  const std::vector<ztensor::Reader::Summary> all = r.summaries();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "m");
  EXPECT_EQ(all[0].format, "sparse_csr");
  EXPECT_FALSE(all[0].dtype.has_value());
  EXPECT_EQ(all[0].components, 3u);
  EXPECT_GT(all[0].attributes_size, 0u);
}

TEST_F(WrapperTest, ExtentsSayWhereEachObjectsBytesLie) {
  ztensor::Reader r(write_sample());
  const std::vector<ztensor::Reader::Placement> all = r.extents();
  ASSERT_EQ(all.size(), r.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const ztensor::Component data = r[i].data();
    const auto one = data.extent();
    ASSERT_EQ(all[i].extent.has_value(), one.has_value()) << i;
    if (one) {
      EXPECT_EQ(all[i].extent->offset, one->offset) << i;
      EXPECT_EQ(all[i].extent->nbytes, one->nbytes) << i;
    }
    EXPECT_EQ(all[i].encoding, std::optional<std::string_view>(data.encoding())) << i;
  }
  // A role no object has: nothing anywhere.
  for (const ztensor::Reader::Placement& p : r.extents("indptr")) {
    EXPECT_FALSE(p.extent.has_value());
    EXPECT_FALSE(p.encoding.has_value());
  }
}

TEST_F(WrapperTest, FilesSayWhichFileHoldsEachObjectsBytes) {
  const std::string p = write_sample();
  ztensor::Reader r(p);
  const auto all = r.files();
  const std::vector<ztensor::Reader::Placement> here = r.extents();
  ASSERT_EQ(all.size(), r.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    // One file: every object with an extent is in it, at that extent.
    ASSERT_EQ(all[i].has_value(), here[i].extent.has_value()) << i;
    if (!all[i]) continue;
    EXPECT_EQ(all[i]->file, p) << i;
    EXPECT_EQ(all[i]->extent.offset, here[i].extent->offset) << i;
    EXPECT_EQ(all[i]->extent.nbytes, here[i].extent->nbytes) << i;
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(all[i]->device, static_cast<std::uint64_t>(st.st_dev)) << i;
    EXPECT_EQ(all[i]->inode, static_cast<std::uint64_t>(st.st_ino)) << i;
  }
  for (const auto& f : r.files("indptr")) EXPECT_FALSE(f.has_value());
}

TEST_F(WrapperTest, SummariesSayWhatEachObjectSays) {
  ztensor::Reader r(write_sample());
  const std::vector<ztensor::Reader::Summary> all = r.summaries();
  ASSERT_EQ(all.size(), r.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const ztensor::Object o = r[i];
    EXPECT_EQ(all[i].name, o.name());
    EXPECT_EQ(all[i].format, o.format());
    EXPECT_EQ(all[i].layout, o.layout());
    EXPECT_TRUE(std::ranges::equal(all[i].shape, o.shape()));
    EXPECT_EQ(all[i].dtype, std::optional<std::string_view>(o.data().dtype()));
    EXPECT_EQ(all[i].type, o.data().type());
    EXPECT_EQ(all[i].components, o.size());
    EXPECT_EQ(all[i].attributes_size, 0u);
  }
  EXPECT_EQ(all[2].name, "ramp");
  EXPECT_EQ(all[2].dtype, std::optional<std::string_view>("u16"));
}

TEST_F(WrapperTest, InvalidObjectIsRefusedAndTheWriterCarriesOn) {
  ztensor::Writer w(path());
  const std::vector<float> values{1, 2};
  const std::vector<std::uint64_t> indices{0, 1}, bad_indptr{0, 1, 5};  // 5 > nnz
  w.begin_object("m", "sparse_csr", {2, 2})
      .add_component("values", values)
      .add_component("indices", indices)
      .add_component("indptr", bad_indptr);
  try {
    w.end_object();
    FAIL() << "a CSR object with indptr past nnz was accepted";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_INVALID) << e.what();
  }
  const std::vector<float> ok{4};
  w.add_dense("ok", ok, {1});
  w.finish();
  ztensor::Reader r(path());
  EXPECT_EQ(r.size(), 1u);
  EXPECT_TRUE(r.contains("ok"));
}

TEST_F(WrapperTest, StreamedComponentEqualsTheWholeBuffer) {
  std::vector<std::uint32_t> big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint32_t>(i * 2654435761u);
  const std::span<const std::byte> all = std::as_bytes(std::span(big));
  {
    ztensor::Writer w(path(), {.zstd_level = 1, .threads = 2, .frame_size = 64 * 1024});
    w.begin_object("s", "dense", {big.size()});
    w.begin_component("data", "u32", std::nullopt, "zstd", all.size());
    for (std::size_t at = 0; at < all.size(); at += 10007)
      w.write(all.subspan(at, std::min<std::size_t>(10007, all.size() - at)));
    w.end_component().end_object();
    w.finish();
  }
  ztensor::Reader r(path());
  const auto s = r["s"].data().as<std::uint32_t>();
  EXPECT_TRUE(std::equal(s.begin(), s.end(), big.begin(), big.end()));
}

TEST_F(WrapperTest, WriterOptionsReachTheLibrary) {
  const std::vector<double> x{1, 2, 3};
  {
    ztensor::Writer w(path(), {.digest = ztensor::Digest::none});
    w.add_dense("x", x, {3});
    w.finish();
  }
  const ztensor::VerifyResult v = ztensor::Reader(path()).verify();
  EXPECT_EQ(v.checked, 0u);
  EXPECT_EQ(v.unchecked, 1u);
  {
    ztensor::Writer w(path(), {.digest = ztensor::Digest::sha256});
    w.add_dense("x", x, {3});
    w.finish();
  }
  ztensor::Reader r(path());
  EXPECT_NE(r.manifest_json().find("sha256:"), std::string_view::npos);
  EXPECT_EQ(r.verify().checked, 1u);
}

TEST_F(WrapperTest, AnUnfinishedWriterLeavesThePathAsItWas) {
  const std::vector<float> x{1};
  {
    ztensor::Writer w(path("never.zt"));
    w.add_dense("x", x, {1});
  }  // destroyed unfinished: aborts
  EXPECT_FALSE(fs::exists(path("never.zt")));

  const fs::path existing = write_sample();
  const std::vector<std::byte> before = slurp(existing);
  {
    ztensor::Writer w(existing);
    w.add_dense("x", x, {1});
    w.abort();
    EXPECT_FALSE(w.is_open());
  }
  EXPECT_EQ(slurp(existing), before);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename(), "t.zt") << "left behind: " << e.path();
}

TEST_F(WrapperTest, ASpentWriterRefusesFurtherCalls) {
  ztensor::Writer w(path());
  const std::vector<float> x{1};
  w.add_dense("x", x, {1});
  try {
    w.add_dense("x", x, {1});
    FAIL() << "duplicate name accepted";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
  w.finish();
  EXPECT_FALSE(w.is_open());
  try {
    w.finish();
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_STATE);
  }
  EXPECT_THROW(w.add_dense("y", x, {1}), ztensor::Error);
}

TEST_F(WrapperTest, DenseSizeMismatchIsRefused) {
  ztensor::Writer w(path());
  const std::vector<float> x{1, 2, 3};
  try {
    w.add_dense("x", x, {2, 2});
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
    EXPECT_NE(e.message().find("\"x\""), std::string::npos) << e.message();
  }
}

TEST_F(WrapperTest, MovedFromHandlesAreEmpty) {
  ztensor::Reader a(write_sample());
  ztensor::Reader b(std::move(a));
  EXPECT_FALSE(
      a.is_open());  // NOLINT(bugprone-use-after-move): the state after a move is the point
  EXPECT_TRUE(b.is_open());
  try {
    (void)a.size();
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_STATE);
  }
  EXPECT_EQ(b.size(), 3u);
  b.close();
  EXPECT_THROW((void)b.file_version(), ztensor::Error);

  ztensor::Writer w1(path("m.zt"));
  ztensor::Writer w2(std::move(w1));
  EXPECT_FALSE(w1.is_open());  // NOLINT(bugprone-use-after-move)
  const std::vector<float> x{1};
  w2.add_dense("x", x, {1});
  w2.finish();
  EXPECT_EQ(ztensor::Reader(path("m.zt")).size(), 1u);
}

TEST_F(WrapperTest, ScalarsHaveRankZeroAndOneElement) {
  const std::vector<std::int32_t> one{42};
  {
    ztensor::Writer w(path());
    w.add_dense("s", one, {});
    w.finish();
  }
  ztensor::Reader r(path());
  EXPECT_TRUE(r["s"].shape().empty());
  EXPECT_EQ(r["s"].element_count(), 1u);
  EXPECT_EQ(r["s"].data().as<std::int32_t>()[0], 42);
}

// Writer::append adds a generation to a v2 file; until finish() the file
// keeps its bytes, and 1.x files are refused.
TEST_F(WrapperTest, AppendAddsAGenerationToAV2File) {
  const fs::path p = path("v2.zt");
  {
    ztensor::WriterOptions o;
    o.file_version = 2;
    ztensor::Writer w(p, o);
    w.add_dense("a", std::vector<float>{1, 2}, {2});
    w.finish();
  }
  const std::vector<std::byte> before = slurp(p);
  {
    ztensor::Writer w = ztensor::Writer::append(p);
    w.add_dense("b", std::vector<std::int32_t>{7}, {1});
    EXPECT_EQ(slurp(p), before);  // nothing published yet
    w.finish();
  }
  const std::vector<std::byte> after = slurp(p);
  ASSERT_GT(after.size(), before.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));  // earlier bytes kept
  ztensor::Reader r(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r["b"].data().read_as<std::int32_t>(), std::vector<std::int32_t>{7});
  EXPECT_THROW(ztensor::Writer::append(write_sample()), ztensor::Error);  // a 1.2 file
}

TEST_F(WrapperTest, ReadIntoRefusesASmallBuffer) {
  ztensor::Reader r(write_sample());
  std::vector<std::byte> small(5);
  try {
    (void)r["w"].data().read_into(small);
    FAIL();
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
  std::vector<std::byte> exact(24);
  EXPECT_EQ(r["w"].data().read_into(exact), 24u);
  float third = 0;
  std::memcpy(&third, exact.data() + 8, sizeof third);
  EXPECT_EQ(third, 3.25f);
}

// A model of every kind read_many meets: raw and zstd components of 5 MiB
// (memory of their own, advised for huge pages), small ones, an empty one,
// a sparse object's components.
fs::path write_model(const fs::path& p) {
  ztensor::Writer w(p, {.frame_size = std::uint64_t{1} << 20});
  std::vector<float> big(std::size_t{5} << 18);  // 5 MiB
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 1000) * 0.5f;
  w.add_dense("raw_big", big, {big.size()});
  w.add_dense("zstd_big", big, {big.size()}, "zstd");
  w.add_dense("small", std::vector<std::int32_t>{1, -2, 3}, {3});
  w.add_dense("empty", std::vector<float>{}, {0});
  const std::vector<float> values{1.5f, 2.5f, 3.5f};
  const std::vector<std::uint64_t> indices{0, 1, 3}, indptr{0, 2, 3};
  w.begin_object("csr", "sparse_csr", {2, 4})
      .add_component("values", values)
      .add_component("indices", indices)
      .add_component("indptr", indptr)
      .end_object();
  w.finish();
  return p;
}

std::vector<std::byte> bytes_of(std::span<const std::byte> b) {
  return {b.begin(), b.end()};
}

TEST_F(WrapperTest, ReadManyGivesEachComponentsBytesInMemoryOfItsOwn) {
  const fs::path p = write_model(path());
  const std::vector<std::byte> file = slurp(p);
  std::vector<ztensor::Reader> readers;  // a mapping, copy mode, memory
  readers.emplace_back(p, ztensor::OpenOptions{.io_mode = ztensor::IoMode::map});
  readers.emplace_back(p, ztensor::OpenOptions{.io_mode = ztensor::IoMode::copy});
  readers.push_back(ztensor::Reader::from_memory(file));
  for (const ztensor::Reader& r : readers) {
    std::vector<ztensor::Reader::Item> items;
    for (ztensor::Object o : r)
      for (ztensor::Component c : o.components())
        items.push_back({o.index(), std::string(c.role())});
    ASSERT_EQ(items.size(), 7u);
    items.push_back(items.front());  // the same component twice: two copies
    for (const unsigned threads : {0u, 1u, 2u}) {
      const std::vector<ztensor::Bytes> got = r.read_many(items, threads);
      ASSERT_EQ(got.size(), items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        const ztensor::Component c = r[items[i].object].component(items[i].role);
        EXPECT_EQ(bytes_of(got[i].span()), c.read_bytes()) << items[i].role << " of " << i;
        EXPECT_EQ(got[i].mapped(), got[i].size() >= (std::size_t{4} << 20)) << i;
        if (got[i].mapped() && zt::test::has_transparent_huge_pages()) {
          std::string flags;
          EXPECT_TRUE(zt::test::advised_for_huge_pages(got[i].data(), &flags)) << flags;
        }
      }
      EXPECT_NE(got.front().data(), got.back().data());
      EXPECT_EQ(got[r["empty"].index()].size(), 0u);
    }
    EXPECT_TRUE(r.read_many({}).empty());
  }
}

TEST_F(WrapperTest, ReadManyCarvesSmallTensorsOutOfSharedHugePageBlocks) {
  const fs::path p = path();
  {
    ztensor::Writer w(p);
    // 600 x 64 KiB (37.5 MiB: a block of 32 MiB, then one of 5.5), a lone
    // 64 KiB one between larger ones, 1 KiB ones, a 4 MiB one.
    std::vector<std::uint16_t> t(std::size_t{32} << 10);
    for (int k = 0; k < 600; ++k) {
      std::fill(t.begin(), t.end(), static_cast<std::uint16_t>(k));
      w.add_dense("a" + std::to_string(1000 + k), t, {t.size()});
    }
    w.add_dense("b0", std::vector<std::uint8_t>(std::size_t{4} << 20, 1), {std::size_t{4} << 20});
    w.add_dense("b1", t, {t.size()});
    w.add_dense("b2", std::vector<std::uint8_t>(1024, 2), {1024});
    w.add_dense("b3", std::vector<std::uint8_t>(1024, 3), {1024});
    w.finish();
  }
  ztensor::Reader r(p);
  std::vector<ztensor::Reader::Item> items;
  for (ztensor::Object o : r) items.push_back({o.index()});
  std::vector<ztensor::Bytes> got = r.read_many(items);
  ASSERT_EQ(got.size(), 604u);
  const std::size_t kib64 = std::size_t{64} << 10;
  for (std::size_t k = 0; k < 600; ++k) {
    ASSERT_EQ(got[k].size(), kib64);
    EXPECT_EQ(std::to_integer<int>(got[k].data()[kib64 - 2]), static_cast<int>(k & 0xff)) << k;
    EXPECT_TRUE(got[k].mapped()) << k;
  }
  // Back to back within a block: 512 fill 32 MiB, the next starts a block.
  for (std::size_t k = 1; k < 600; ++k) {
    if (k == 512) continue;
    EXPECT_EQ(got[k].data(), got[k - 1].data() + kib64) << k;
  }
  if (zt::test::has_transparent_huge_pages()) {
    std::string flags;
    EXPECT_TRUE(zt::test::advised_for_huge_pages(got[0].data(), &flags)) << flags;
    EXPECT_TRUE(zt::test::advised_for_huge_pages(got[512].data(), &flags)) << flags;
  }
  EXPECT_TRUE(got[600].mapped());   // 4 MiB: its own
  EXPECT_FALSE(got[601].mapped());  // alone between others: not worth a block
  EXPECT_FALSE(got[602].mapped());  // under 4 KiB: from new
  EXPECT_EQ(got[603].data()[1023], std::byte{3});
  // A carved Bytes kept alone keeps its block.
  ztensor::Bytes kept = std::move(got[7]);
  got.clear();
  EXPECT_EQ(std::to_integer<int>(kept.data()[0]), 7);
  EXPECT_EQ(bytes_of(kept.span()), r["a1007"].data().read_bytes());
}

TEST_F(WrapperTest, ReadManyRefusesWhatItCannotSizeBeforeDecoding) {
  const fs::path p = write_model(path());
  ztensor::Reader r(p);
  const std::vector<ztensor::Reader::Item> unknown_role = {{r["small"].index()},
                                                           {r["csr"].index(), "nope"}};
  try {
    (void)r.read_many(unknown_role);
    ADD_FAILURE() << "no error";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_NOT_FOUND) << e.what();
    EXPECT_NE(e.message().find("nope"), std::string::npos) << e.message();
  }
  const std::vector<ztensor::Reader::Item> no_object = {{r.size()}};
  EXPECT_THROW((void)r.read_many(no_object), ztensor::Error);
  // Over the reader's cap: the read's own refusal, before any memory.
  ztensor::Reader capped(p, {.max_decoded_bytes = std::uint64_t{1} << 20});
  const std::vector<ztensor::Reader::Item> big = {{capped["small"].index()},
                                                  {capped["zstd_big"].index()}};
  try {
    (void)capped.read_many(big);
    ADD_FAILURE() << "no error";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_LIMIT) << e.what();
  }
}

TEST_F(WrapperTest, DecodeManyGivesEachRequestItsStatus) {
  ztensor::Reader r(write_model(path()));
  ztensor::Bytes big = ztensor::Bytes::uninitialized(std::uint64_t{5} << 20);
  ztensor::Bytes zstd = ztensor::Bytes::uninitialized(std::uint64_t{5} << 20);
  ztensor::Bytes cramped = ztensor::Bytes::uninitialized(8);  // "small" needs 12
  std::vector<ztensor::Reader::Request> requests = {{r["raw_big"].index(), "data", big.span()},
                                                    {r["small"].index(), "data", cramped.span()},
                                                    {r["zstd_big"].index(), "data", zstd.span()}};
  try {
    r.decode_many(requests, 2);
    ADD_FAILURE() << "no error";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
  EXPECT_EQ(requests[0].status, ZT_OK);
  EXPECT_EQ(requests[0].written, std::uint64_t{5} << 20);
  EXPECT_EQ(requests[1].status, ZT_ERR_ARGUMENT);
  EXPECT_EQ(requests[2].status, ZT_OK);
  EXPECT_EQ(requests[2].written, std::uint64_t{5} << 20);
  EXPECT_EQ(bytes_of(zstd.span()), r["zstd_big"].data().read_bytes());
  EXPECT_EQ(bytes_of(big.span()), bytes_of(zstd.span()));
  requests.erase(requests.begin() + 1);
  requests[1].role = "nope";
  EXPECT_THROW(r.decode_many(requests), ztensor::Error);
  EXPECT_EQ(requests[0].status, ZT_OK);
  EXPECT_EQ(requests[1].status, ZT_ERR_NOT_FOUND);
}

TEST(WrapperBytes, OwnsFreshMemoryAndMovesIt) {
  ztensor::Bytes none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_TRUE(ztensor::Bytes::uninitialized(0).empty());
  ztensor::Bytes small = ztensor::Bytes::uninitialized(100);
  EXPECT_EQ(small.size(), 100u);
  EXPECT_FALSE(small.mapped());
  std::memset(small.data(), 7, small.size());
  ztensor::Bytes big = ztensor::Bytes::uninitialized((std::uint64_t{4} << 20) + 1);
  EXPECT_TRUE(big.mapped());
  big.data()[big.size() - 1] = std::byte{9};
  ztensor::Bytes moved = std::move(big);
  EXPECT_TRUE(big.empty());  // NOLINT(bugprone-use-after-move): a moved-from Bytes is empty
  EXPECT_EQ(moved.data()[moved.size() - 1], std::byte{9});
  moved = std::move(small);
  EXPECT_EQ(moved.size(), 100u);
  EXPECT_EQ(moved.data()[99], std::byte{7});
  moved.truncate(10);
  EXPECT_EQ(moved.size(), 10u);
  moved.truncate(50);
  EXPECT_EQ(moved.size(), 10u);
  try {
    (void)ztensor::Bytes::uninitialized(std::numeric_limits<std::uint64_t>::max(), "w");
    ADD_FAILURE() << "no error";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_NOMEM);
    EXPECT_EQ(e.message().rfind("w: cannot allocate", 0), 0u) << e.message();
  }
}

TEST(WrapperVersion, MatchesTheHeader) {
  EXPECT_EQ(ztensor::version(), std::to_string(ZT_VERSION_MAJOR) + "." +
                                    std::to_string(ZT_VERSION_MINOR) + "." +
                                    std::to_string(ZT_VERSION_PATCH));
}

}  // namespace

// ---------------------------------------------------------------------------
// Typed views: conversions, dense/CSR/COO/quantized views, row slices.

namespace typed {

class TypedViewTest : public WrapperTest {};

template <typename T>
std::vector<T> vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

TEST_F(TypedViewTest, AnyDtypeConvertsToFloat) {
  const std::vector<std::uint16_t> bf16{0x3f80, 0xc000, 0x0000, 0x4049};  // 1, -2, 0, 3.140625
  const std::vector<std::uint8_t> fp8{0x38, 0xb8, 0x00, 0x40};            // e4m3fn: 1, -1, 0, 2
  const std::vector<std::int32_t> ints{-7, 0, 1 << 20};
  const std::vector<std::uint8_t> flags{1, 0, 1};
  {
    ztensor::Writer w(path());
    w.add_dense("bf16", "bf16", {2, 2}, std::as_bytes(std::span(bf16)));
    w.begin_object("fp8", "dense", {4})
        .add_component("data", "u8", "f8_e4m3fn", std::as_bytes(std::span(fp8)), "zstd")
        .end_object();
    w.add_dense("ints", ints, {3});
    w.add_dense("flags", "bool", {3}, std::as_bytes(std::span(flags)));
    w.finish();
  }
  ztensor::Reader r(path());
  EXPECT_EQ(r["bf16"].read_f32(), (std::vector<float>{1, -2, 0, 3.140625f}));
  EXPECT_EQ(r["fp8"].read_f32(), (std::vector<float>{1, -1, 0, 2}));
  EXPECT_EQ(r["fp8"].data().read_f64(), (std::vector<double>{1, -1, 0, 2}));
  EXPECT_EQ(r["ints"].read_f64(), (std::vector<double>{-7, 0, 1 << 20}));
  EXPECT_EQ(r["flags"].decode_f32(), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(vec(r["flags"].data().as<std::uint8_t>()), flags);  // bool bytes as uint8_t
}

TEST_F(TypedViewTest, DenseViewSaysWhetherItIsZeroCopy) {
  ztensor::Reader r(write_sample());
  const ztensor::DenseView w = r["w"].dense();
  EXPECT_TRUE(w.zero_copy);
  EXPECT_EQ(w.elements, 6u);
  EXPECT_EQ(w.data.dtype(), "f32");
  EXPECT_EQ(w.data.as<float>()[2], 3.25f);
  EXPECT_EQ(w.data.as<float>().data(), r["w"].data().as<float>().data());

  const ztensor::DenseView ramp = r["ramp"].dense();
  EXPECT_FALSE(ramp.zero_copy);  // zstd: decoded into the reader's cache
  EXPECT_EQ(ramp.data.size(), 4096u);
  EXPECT_EQ(ramp.data.as<std::uint16_t>()[13], 13 % 7);
}

TEST_F(TypedViewTest, CsrAndCooViewsAndTheirDenseDecoding) {
  // [[1, 0, 2], [0, 0, 3]]
  const std::vector<float> values{1, 2, 3};
  const std::vector<std::uint64_t> indices{0, 2, 2}, indptr{0, 2, 3};
  const std::vector<std::uint64_t> coords{0, 0, 1, /* columns */ 0, 2, 2};
  {
    ztensor::Writer w(path());
    w.begin_object("csr", "sparse_csr", {2, 3})
        .add_component("values", values)
        .add_component("indices", indices)
        .add_component("indptr", indptr)
        .end_object();
    w.begin_object("coo", "sparse_coo", {2, 3})
        .add_component("values", values, "zstd")
        .add_component("coords", coords)
        .end_object();
    w.finish();
  }
  ztensor::Reader r(path());
  const ztensor::CsrView csr = r["csr"].csr();
  EXPECT_TRUE(csr.zero_copy);
  EXPECT_EQ(csr.rows, 2u);
  EXPECT_EQ(csr.cols, 3u);
  EXPECT_EQ(csr.nnz, 3u);
  EXPECT_EQ(vec(csr.values.as<float>()), values);
  EXPECT_EQ(vec(csr.indices.as<std::uint64_t>()), indices);
  EXPECT_EQ(vec(csr.indptr.as<std::uint64_t>()), indptr);

  const ztensor::CooView coo = r["coo"].coo();
  EXPECT_FALSE(coo.zero_copy);  // values are zstd
  EXPECT_EQ(coo.nnz, 3u);
  ASSERT_EQ(coo.shape.size(), 2u);
  EXPECT_EQ(vec(coo.coords_of(0)), (std::vector<std::uint64_t>{0, 0, 1}));
  EXPECT_EQ(vec(coo.coords_of(1)), (std::vector<std::uint64_t>{0, 2, 2}));
  EXPECT_THROW((void)coo.coords_of(2), ztensor::Error);

  const std::vector<float> dense{1, 0, 2, 0, 0, 3};
  EXPECT_EQ(r["csr"].decode_f32(), dense);
  EXPECT_EQ(r["coo"].decode_f64(), (std::vector<double>(dense.begin(), dense.end())));

  try {
    (void)r["csr"].coo();
    FAIL() << "a CSR object viewed as COO";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
  EXPECT_THROW((void)r["coo"].dense(), ztensor::Error);
}

TEST_F(TypedViewTest, QuantizedGroupIsDequantised) {
  // N = 2 rows, K = 8 inputs, 4 bits, groups of 4 (G = 2), 8 values per i32
  // word: packed_weight is [W = 1, N = 2]; q(n, k) = bits [4k, 4k + 4) of word n.
  const std::uint32_t q[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {15, 14, 13, 12, 11, 10, 9, 8}};
  std::vector<std::int32_t> packed(2);
  for (int n = 0; n < 2; ++n) {
    std::uint32_t word = 0;
    for (int k = 0; k < 8; ++k) word |= q[n][k] << (4 * k);
    packed[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(word);
  }
  const std::vector<float> scales{0.5f, 2.0f, /* group 1 */ 0.25f, 1.0f};  // [G, N]
  const std::vector<float> zeros{1, 8, /* group 1 */ 0, 4};                // [G, N]
  {
    ztensor::Writer w(path());
    w.begin_object("q", "quantized_group", {2, 8})
        .set_object_attributes_json(R"({"bits": 4, "group_size": 4, "packing": "8_per_i32"})")
        .add_component("packed_weight", packed)
        .add_component("scales", scales)
        .add_component("zeros", zeros)
        .end_object();
    w.finish();
  }
  ztensor::Reader r(path());
  const ztensor::QuantView v = r["q"].quant();
  EXPECT_EQ(v.bits, 4u);
  EXPECT_EQ(v.group_size, 4u);
  EXPECT_EQ(v.n, 2u);
  EXPECT_EQ(v.k, 8u);
  EXPECT_EQ(v.groups, 2u);
  EXPECT_EQ(v.values_per_word, 8u);
  EXPECT_FALSE(v.bitstream);
  EXPECT_FALSE(v.zeros_packed);
  EXPECT_EQ(vec(v.packed_weight.as<std::int32_t>()), packed);
  EXPECT_EQ(vec(v.scales.as<float>()), scales);

  std::vector<float> want;
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t k = 0; k < 8; ++k) {
      const std::size_t g = k / 4;
      want.push_back((static_cast<float>(q[n][k]) - zeros[g * 2 + n]) * scales[g * 2 + n]);
    }
  EXPECT_EQ(r["q"].decode_f32(), want);
  EXPECT_EQ(r["q"].value_count(), 16u);
}

TEST_F(TypedViewTest, RowSlices) {
  std::vector<std::int16_t> m(40 * 3);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::int16_t>(i);
  {
    ztensor::Writer w(path());
    w.add_dense("raw", m, {40, 3});
    w.add_dense("packed", m, {40, 3}, "zstd");
    w.finish();
  }
  ztensor::Reader r(path());
  const std::vector<std::int16_t> rows_1_3(m.begin() + 3, m.begin() + 9);
  const ztensor::ArrayView raw = r["raw"].rows(1, 3);
  EXPECT_EQ(vec(raw.as<std::int16_t>()), rows_1_3);
  EXPECT_EQ(raw.as<std::int16_t>().data(), r["raw"].data().as<std::int16_t>().data() + 3);

  const std::vector<std::byte> copy = r["packed"].read_rows(1, 3);
  ASSERT_EQ(copy.size(), 12u);
  std::int16_t first = 0;
  std::memcpy(&first, copy.data(), 2);
  EXPECT_EQ(first, 3);
  EXPECT_EQ(r["packed"].rows_f32(38, 40), (std::vector<float>{114, 115, 116, 117, 118, 119}));
  EXPECT_TRUE(r["raw"].rows_f64(5, 5).empty());
  try {
    (void)r["raw"].rows(3, 41);
    FAIL() << "rows past the end";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
}

TEST_F(TypedViewTest, NdSlices) {
  std::vector<std::int16_t> m(4 * 5 * 6);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::int16_t>(i);
  {
    ztensor::Writer w(path());
    w.add_dense("packed", m, {4, 5, 6}, "zstd");
    w.finish();
  }
  ztensor::Reader r(path());
  const std::uint64_t begin[] = {1, 2, 3}, end[] = {3, 3, 5};
  // [1, 2, 3..5) and [2, 2, 3..5): flat 1*30 + 2*6 + 3 = 45, 46; 75, 76.
  EXPECT_EQ(r["packed"].slice_f32(begin, end), (std::vector<float>{45, 46, 75, 76}));
  const std::vector<std::byte> bytes = r["packed"].read_slice(begin, end);
  ASSERT_EQ(bytes.size(), 8u);
  std::int16_t last = 0;
  std::memcpy(&last, bytes.data() + 6, 2);
  EXPECT_EQ(last, 76);
  const std::uint64_t two[] = {0, 0};
  try {
    (void)r["packed"].slice_f64(two, two);
    FAIL() << "a 2-d box of a 3-d object";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
  // Ends fewer than begins: refused before the library reads past `end`
  // (it reads as many of both as there are begins).
  const std::vector<std::uint64_t> shorter(end, end + 2);
  for (int k = 0; k < 3; ++k) {
    try {
      if (k == 0) (void)r["packed"].read_slice(begin, shorter);
      if (k == 1) (void)r["packed"].slice_f32(begin, shorter);
      if (k == 2) (void)r["packed"].slice_f64(begin, shorter);
      FAIL() << "3 begins and 2 ends";
    } catch (const ztensor::Error& e) {
      EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
      EXPECT_NE(std::string(e.what()).find("3 begins and 2 ends"), std::string::npos) << e.what();
    }
  }
}

}  // namespace typed

namespace typed {

TEST_F(TypedViewTest, ViewsOfTheWrongFormatGiveTheLibrarysError) {
  const std::vector<float> values{1};
  const std::vector<std::uint64_t> indices{0}, indptr{0, 1};
  {
    ztensor::Writer w(path());
    w.begin_object("m", "sparse_csr", {1, 1})
        .add_component("values", values)
        .add_component("indices", indices)
        .add_component("indptr", indptr)
        .end_object();
    w.finish();
  }
  ztensor::Reader r(path());
  for (auto call : {+[](const ztensor::Object& o) { (void)o.read_rows(0, 1); },
                    +[](const ztensor::Object& o) { (void)o.rows_f32(0, 1); },
                    +[](const ztensor::Object& o) { (void)o.quant(); },
                    +[](const ztensor::Object& o) { (void)o.read_f32(); }}) {
    try {
      call(r["m"]);
      ADD_FAILURE() << "a sparse object was read as another format";
    } catch (const ztensor::Error& e) {
      EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
    }
  }
}

}  // namespace typed

namespace {

// Issue 25, item 3: a NUL inside a std::string_view is refused, never cut
// short into another name.
class WrapperNulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("zt_nul_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

void expect_argument_error(const std::function<void()>& call, const char* what) {
  try {
    call();
    ADD_FAILURE() << what << ": no error";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << what << ": " << e.what();
    EXPECT_NE(e.message().find("NUL"), std::string::npos) << e.message();
  }
}

TEST_F(WrapperNulTest, EmbeddedNulIsAnArgumentErrorNeverAnotherName) {
  using namespace std::string_view_literals;
  const std::filesystem::path p = dir_ / "t.zt";
  {
    ztensor::Writer w(p);
    const std::vector<float> v{1, 2};
    expect_argument_error([&] { w.add_dense("weight\0.secret"sv, v, {2}); }, "add_dense");
    w.add_dense("weight", v, {2});
    w.finish();
  }
  ztensor::Reader r(p);
  EXPECT_EQ(r.size(), 1u);
  expect_argument_error([&] { (void)r["weight\0zzz"sv]; }, "operator[]");
  expect_argument_error([&] { (void)r.find("weight\0zzz"sv); }, "find");
  expect_argument_error([&] { ztensor::Reader bad(std::string("t.zt\0x", 6)); }, "Reader path");
  expect_argument_error([&] { ztensor::Writer bad(dir_ / std::string("u.zt\0.backup", 12)); },
                        "Writer path");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "u.zt"));
}

}  // namespace

namespace {

// A minimal CBOR writer for the hostile file below (the wrapper tests link
// the public library only).
struct Cbor {
  std::vector<std::uint8_t> out;
  void head(std::uint8_t major, std::uint64_t v) {
    if (v < 24) {
      out.push_back(static_cast<std::uint8_t>(major << 5 | v));
    } else {
      out.push_back(static_cast<std::uint8_t>(major << 5 | 27));
      for (int i = 7; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
  }
  void text(std::string_view s) {
    head(3, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  // {"version": version, "objects": {name: {"format": format, "shape": [n],
  // "components": {role: {<pairs> ...: the caller writes the pairs.
  void one_object(std::string_view version, std::string_view name, std::string_view format,
                  std::uint64_t n, std::string_view role, std::uint64_t component_pairs) {
    head(5, 2);
    text("version");
    text(version);
    text("objects");
    head(5, 1);
    text(name);
    head(5, 3);
    text("format");
    text(format);
    text("shape");
    head(4, 1);
    head(0, n);
    text("components");
    head(5, 1);
    text(role);
    head(5, component_pairs);
  }
  // Four pairs of a component: "dtype", "offset": 64 (write_file's blob),
  // "length", "encoding": "zstd".
  void zstd_at_64(std::string_view dtype, std::uint64_t length) {
    text("dtype");
    text(dtype);
    text("offset");
    head(0, 64);
    text("length");
    head(0, length);
    text("encoding");
    text("zstd");
  }
  // A 1.2.0 dense object "w" of n elements, its "data" component's pairs to come.
  void dense_w(std::uint64_t n, std::uint64_t component_pairs) {
    one_object("1.2.0", "w", "dense", n, "data", component_pairs);
  }
};

// A 1.2.0 file: `blob` (at most 64 bytes) at offset 64, the manifest at 128.
// Built at its final size: growing a vector by insert trips GCC 12's
// -Warray-bounds at -O3.
void write_file(const std::filesystem::path& p, std::span<const std::uint8_t> blob,
                const Cbor& manifest) {
  std::vector<std::uint8_t> file(128 + manifest.out.size() + 16, 0);
  const std::string_view magic = "ZTEN1000";
  std::copy(magic.begin(), magic.end(), file.begin());
  std::copy(blob.begin(), blob.end(), file.begin() + 64);
  std::copy(manifest.out.begin(), manifest.out.end(), file.begin() + 128);
  const std::size_t tail = 128 + manifest.out.size();
  for (std::size_t i = 0; i < 8; ++i)
    file[tail + i] = static_cast<std::uint8_t>(manifest.out.size() >> (8 * i));
  std::copy(magic.begin(), magic.end(), file.begin() + static_cast<std::ptrdiff_t>(tail + 8));
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
}

// Issue 25, item 5: a 64-byte u8 component with a logical type the library
// does not know and shape [2^40]. The view must be sized by the 64 bytes.
TEST_F(WrapperNulTest, DenseViewIsSizedByTheBytesNotTheShape) {
  Cbor c;
  c.dense_w(std::uint64_t{1} << 40, 4);
  c.text("dtype");
  c.text("u8");
  c.text("type");
  c.text("my_type");
  c.text("offset");
  c.head(0, 64);
  c.text("length");
  c.head(0, 64);
  const std::vector<std::uint8_t> data(64, 7);
  const std::filesystem::path p = dir_ / "hostile.zt";
  write_file(p, data, c);
  ztensor::Reader r(p);
  const ztensor::DenseView v = r["w"].dense();
  EXPECT_EQ(v.elements, std::uint64_t{1} << 40);  // what the shape claims
  EXPECT_EQ(v.data.size(), 64u);                  // what the bytes hold
  EXPECT_EQ(v.data.bytes().size(), 64u);
  EXPECT_EQ(v.data.bytes().back(), std::byte{7});
}

// A 1.1.0 file whose zstd component states no decoded size (1.1 left
// uncompressed_length optional; the frame states none either): read_many
// sizes it by the reader's cached decode, then copies it.
TEST_F(WrapperNulTest, ReadManySizesByDecodingWhatNothingSizes) {
  std::vector<std::uint8_t> data(40);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7 + 1);
  // A frame without a content size (descriptor 0, a 1 KiB window), one
  // last raw block holding the data.
  std::vector<std::uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00};
  const std::uint32_t block = static_cast<std::uint32_t>(data.size() << 3) | 1u;
  for (int i = 0; i < 3; ++i) frame.push_back(static_cast<std::uint8_t>(block >> (8 * i)));
  frame.insert(frame.end(), data.begin(), data.end());
  Cbor c;
  c.one_object("1.1.0", "o", "my_format", 1, "blob", 4);
  c.zstd_at_64("u8", frame.size());
  const std::filesystem::path p = dir_ / "unsized.zt";
  write_file(p, frame, c);
  ztensor::Reader r(p);
  EXPECT_FALSE(r["o"].component("blob").decoded_size());
  const std::vector<ztensor::Reader::Item> items = {{0, "blob"}, {0, "blob"}};
  const std::vector<ztensor::Bytes> got = r.read_many(items);
  ASSERT_EQ(got.size(), 2u);
  for (const ztensor::Bytes& b : got) {
    ASSERT_EQ(b.size(), data.size());
    EXPECT_EQ(std::memcmp(b.data(), data.data(), data.size()), 0);
  }
}

}  // namespace

namespace {

// Issue 25, item 6: the obvious loop over a temporary Object's components
// (ASan: stack-use-after-scope before the range held the Object by value).
TEST_F(WrapperNulTest, RangesOverTemporariesOwnWhatTheyIterate) {
  const std::filesystem::path p = dir_ / "r.zt";
  {
    ztensor::Writer w(p);
    const std::vector<float> v{1, 2, 3};
    w.add_dense("w", v, {3});
    w.add_dense("x", v, {3});
    w.finish();
  }
  ztensor::Reader file(p);
  std::vector<std::string> roles;
  for (ztensor::Component c : file["w"].components()) roles.emplace_back(c.role());
  EXPECT_EQ(roles, std::vector<std::string>{"data"});
  std::vector<std::string> names;
  for (ztensor::Object o : file) names.emplace_back(o.name());
  EXPECT_EQ(names, (std::vector<std::string>{"w", "x"}));
}

}  // namespace

namespace {

// Issue 25, item 8: a 17-byte zstd component claiming 256 MiB. The wrapper's
// copies give the library's refusal as ztensor::Error, and the claim costs
// no memory (it was zero-filled before the library was asked).
// f32 object "w" of claim / 4 elements: one 17-byte zstd frame that states
// `claim` decoded bytes and holds 128 KiB (one RLE block).
void write_zstd_claim(const std::filesystem::path& p, std::uint64_t claim) {
  std::vector<std::uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd, 0xE0};
  for (int i = 0; i < 8; ++i) frame.push_back(static_cast<std::uint8_t>(claim >> (8 * i)));
  const std::uint32_t block = (131072u << 3) | (1u << 1) | 1u;  // last block, RLE, 128 KiB
  for (int i = 0; i < 3; ++i) frame.push_back(static_cast<std::uint8_t>(block >> (8 * i)));
  frame.push_back(0);
  Cbor c;
  c.dense_w(claim / 4, 5);
  c.zstd_at_64("f32", frame.size());
  c.text("uncompressed_length");
  c.head(0, claim);
  write_file(p, frame, c);
}

TEST_F(WrapperNulTest, ClaimedSizesCostNothingUntilTheLibraryProvesThem) {
  const std::uint64_t claim = std::uint64_t{256} << 20;
  const std::filesystem::path p = dir_ / "claim.zt";
  write_zstd_claim(p, claim);
  // In a child, so that its peak resident memory is this test's alone.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    try {
      ztensor::Reader r(p);
      const ztensor::Component data = r["w"].component("data");
      for (int k = 0; k < 7; ++k) {
        try {
          if (k == 0) (void)data.read_bytes();
          if (k == 1) (void)data.read_f32();
          if (k == 2) (void)r["w"].read_f64();
          // Rows and boxes were zero-filled at the shape's size first.
          if (k == 3) (void)r["w"].rows_f32(0, claim / 4);
          if (k == 4) (void)r["w"].read_rows(0, claim / 4);
          const std::uint64_t b[1] = {0}, e[1] = {claim / 4};
          if (k == 5) (void)r["w"].read_slice(b, e);
          if (k == 6) (void)r["w"].slice_f64(b, e);
          code |= 1;  // no error
        } catch (const ztensor::Error& e) {
          if (e.status() != ZT_ERR_INVALID) code |= 2;
        }
      }
    } catch (...) {
      code |= 4;
    }
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    if (ru.ru_maxrss > 200 * 1024) code |= 8;  // KiB: the claim is 256 MiB
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: no error, 2: not ZT_ERR_INVALID, 4: other exception, 8: peak > 200 MiB";
}

// A claim over the reader's cap is refused with the read's own status
// (ZT_ERR_LIMIT), not by the allocator (ZT_ERR_NOMEM), in every copy.
TEST_F(WrapperNulTest, ClaimsOverTheCapGiveTheReadsOwnRefusal) {
  const std::filesystem::path p = dir_ / "huge.zt";
  write_zstd_claim(p, std::uint64_t{1} << 40);
  ztensor::Reader r(p, {.max_decoded_bytes = std::uint64_t{1} << 20});
  const ztensor::Component data = r["w"].component("data");
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"read_bytes", [&] { (void)data.read_bytes(); }},
      {"component read_f32", [&] { (void)data.read_f32(); }},
      {"object read_f32", [&] { (void)r["w"].read_f32(); }},
      {"decode_f64", [&] { (void)r["w"].decode_f64(); }},
  };
  for (const auto& [what, call] : calls) {
    try {
      call();
      ADD_FAILURE() << what << ": no error";
    } catch (const ztensor::Error& e) {
      EXPECT_EQ(e.status(), ZT_ERR_LIMIT) << what << ": " << e.what();
    }
  }
}

// A sparse object of a few hundred bytes claiming 2^62 values: read_f32
// (dense only) gives the library's ZT_ERR_ARGUMENT, decode_f32 its
// ZT_ERR_LIMIT, before anything is sized from the shape.
TEST_F(WrapperNulTest, SparseShapesSizeNothingBeforeTheLibraryAnswers) {
  const std::filesystem::path p = dir_ / "s.zt";
  {
    ztensor::Writer w(p);
    w.begin_object("s", "sparse_coo", {std::uint64_t{1} << 31, std::uint64_t{1} << 31})
        .add_component("values", std::vector<float>{})
        .add_component("coords", std::vector<std::uint64_t>{})
        .end_object();
    w.finish();
  }
  ztensor::Reader r(p);
  try {
    (void)r["s"].read_f32();
    ADD_FAILURE() << "read_f32 of a sparse object";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_ARGUMENT) << e.what();
  }
  try {
    (void)r["s"].decode_f32();
    ADD_FAILURE() << "decode_f32 of 2^62 values";
  } catch (const ztensor::Error& e) {
    EXPECT_EQ(e.status(), ZT_ERR_LIMIT) << e.what();
    EXPECT_NE(e.message().find("decode limit"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// A refused complex add_dense drops its object, as the one-call add_dense
// does: the writer goes on and finish() writes what was added.
TEST_F(WrapperTest, ARefusedComplexDenseLeavesTheWriterUsable) {
  const fs::path p = path();
  {
    ztensor::Writer w(p);
    const std::vector<std::complex<float>> z(3);
    EXPECT_THROW(w.add_dense("z", z, {2}), ztensor::Error);  // 24 bytes for 2 elements
    EXPECT_THROW(w.add_dense("z", std::span<const std::complex<float>>(z), {3}, "bogus"),
                 ztensor::Error);
    w.add_dense("x", std::vector<float>{1}, {1});
    w.add_dense("z", z, {3});  // a vector of complex values, as of real ones
    w.finish();
  }
  ztensor::Reader r(p);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r["z"].data().type(), "complex64");
}

// A Shape may be kept: a braced list is copied, not referred to.
TEST_F(WrapperTest, AKeptShapeOwnsItsBracedList) {
  const fs::path p = path();
  const ztensor::Shape shape{2, 3};
  ztensor::Shape copied = shape;
  {
    ztensor::Writer w(p);
    w.add_dense("w", std::vector<float>(6, 1.0f), shape);
    w.add_dense("v", std::vector<float>(6, 2.0f), copied);
    w.finish();
  }
  ztensor::Reader r(p);
  EXPECT_EQ(std::vector<std::uint64_t>(r["w"].shape().begin(), r["w"].shape().end()),
            (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(std::vector<std::uint64_t>(r["v"].shape().begin(), r["v"].shape().end()),
            (std::vector<std::uint64_t>{2, 3}));
}

// No logical type is std::nullopt; a null pointer does not compile (it was
// read as text: strlen(nullptr)).
template <typename W, typename Type>
concept TakesTypeAs = requires(W& w, Type type, std::span<const std::byte> b) {
  w.add_component("data", "u8", type, b);
};
static_assert(!TakesTypeAs<ztensor::Writer, std::nullptr_t>);
static_assert(TakesTypeAs<ztensor::Writer, std::nullopt_t>);
static_assert(TakesTypeAs<ztensor::Writer, const char*>);

// An iterator of a temporary range holds what the range held (ASan:
// stack-use-after-scope before).
TEST_F(WrapperTest, IteratorsOutliveTheirTemporaryRange) {
  ztensor::Reader r(write_sample());
  auto it = r["w"].components().begin();
  EXPECT_EQ((*it).role(), "data");
  std::size_t n = 0;
  for (auto i = r["w"].components().begin(); i != r["w"].components().end(); ++i) ++n;
  EXPECT_EQ(n, 1u);
}

void told_nothing(std::size_t, zt_status) {}

// on_done may be a const callable or a function; an exception it throws is
// rethrown after every range is done, never through the library's workers.
TEST_F(WrapperTest, DecodeRangesCallbacksOfEveryKind) {
  ztensor::Reader r(write_sample());
  std::vector<std::byte> a(8), b(8);
  const std::vector<ztensor::Reader::Range> ranges{{r["ramp"].index(), "data", 0, a},
                                                   {r["ramp"].index(), "data", 8, b}};
  const auto quiet = [](std::size_t, zt_status) {};
  r.decode_ranges(ranges, 0, quiet);
  r.decode_ranges(ranges, 0, told_nothing);
  r.decode_ranges(ranges, 0, &told_nothing);
  EXPECT_THROW(
      r.decode_ranges(ranges, 2, [](std::size_t, zt_status) { throw std::runtime_error("x"); }),
      std::runtime_error);
}

// The NUL rule holds for ranges' roles and for URLs and headers: a header
// "X: 1\0" would drop every header after it.
TEST_F(WrapperTest, NulInRolesUrlsAndHeadersIsRefused) {
  ztensor::Reader r(write_sample());
  std::vector<std::byte> a(4);
  const std::vector<ztensor::Reader::Range> ranges{
      {r["w"].index(), std::string("data\0x", 6), 0, a}};
  expect_argument_error([&] { r.decode_ranges(ranges); }, "range role");
  ztensor::HttpOptions h;
  h.headers = {std::string("X-A: 1\0", 7), "Authorization: Bearer t"};
  expect_argument_error([&] { (void)ztensor::Reader::from_url("http://127.0.0.1:1/x.zt", h); },
                        "header");
  expect_argument_error(
      [&] { (void)ztensor::Reader::from_url(std::string("http://127.0.0.1:1/x.zt\0y", 25)); },
      "url");
}

}  // namespace
