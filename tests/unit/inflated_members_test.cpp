// InflatedMembers: deflated zip members (np.savez_compressed's) inflated by
// ISA-L where they lie in the mapped archive, each member its own stream,
// so that reads of different members run side by side; a member read in
// pieces continues its stream, one read from behind starts it over; the
// end of each member is checked as libzip checks it (the stated size both
// ways, the CRC-32, a damaged stream), with messages naming the member.
#include "foreign/inflated_members.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "foreign/foreign_reader.h"
#include "foreign/zip_archive.h"
#include "read/batch_decode.h"
#include "read/batch_plan.h"
#include "source/io.h"
#include "test_files.h"

namespace {

using zt::foreign::InflatedMembers;
using zt::foreign::ZipArchive;
using zt::foreign::ZipMember;

// Weights-like bytes: half random, half runs (deflate makes ~1.5:1).
std::vector<uint8_t> member_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = (i / 512) % 2 ? static_cast<uint8_t>(rng()) : uint8_t(i >> 9);
  return v;
}

// Writes `members` deflated into the archive at `path` with libzip, named
// m0, m1, ... and `suffix`.
void write_deflated(const std::string& path, const std::vector<std::vector<uint8_t>>& members,
                    const std::string& suffix = "") {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr) << err;
  for (size_t k = 0; k < members.size(); ++k) {
    zip_source_t* s = zip_source_buffer(z, members[k].data(), members[k].size(), 0);
    ASSERT_NE(s, nullptr);
    const zip_int64_t i = zip_file_add(z, ("m" + std::to_string(k) + suffix).c_str(), s, 0);
    ASSERT_GE(i, 0);
    ASSERT_EQ(zip_set_file_compression(z, static_cast<zip_uint64_t>(i), ZIP_CM_DEFLATE, 0), 0);
  }
  ASSERT_EQ(zip_close(z), 0);
}

class InflatedMembersTest : public testing::Test {
 protected:
  void SetUp() override {
    for (unsigned k = 0; k < 4; ++k) data_.push_back(member_bytes((3u << 20) + 1000 * k, k));
    path_ = dir_.path() + "/a.npz";
    write_deflated(path_, data_);
    open();
  }
  void open() {
    auto a = ZipArchive::open(path_);
    ASSERT_TRUE(a.ok()) << a.error().message;
    archive_ = std::make_shared<const ZipArchive>(std::move(*a));
    auto s = zt::Source::open_file(path_, zt::Source::Mode::map);
    ASSERT_TRUE(s.ok()) << s.error().message;
    file_ = std::move(*s);
    ASSERT_EQ(archive_->members().size(), data_.size());
  }
  std::span<const uint8_t> mapped() const { return {file_.base(), file_.size()}; }
  // Every member added as the archive states it (`edit` may change that).
  std::unique_ptr<InflatedMembers> members(void (*edit)(ZipMember&) = nullptr) {
    auto in = std::make_unique<InflatedMembers>(archive_, path_);
    for (ZipMember m : archive_->members()) {
      const auto stream = archive_->deflated_in_place(mapped(), m);
      EXPECT_TRUE(stream.has_value()) << m.name;
      if (edit) edit(m);
      starts_.push_back(in->add(m, "member " + m.name, stream));
    }
    return in;
  }

  zt::test::TempDir dir_{"inflated"};
  std::string path_;
  std::vector<std::vector<uint8_t>> data_;
  std::shared_ptr<const ZipArchive> archive_;
  zt::Source file_;
  std::vector<uint64_t> starts_;
};

TEST_F(InflatedMembersTest, EachMembersStreamLiesWhereLibzipReadsItsRawData) {
  for (const ZipMember& m : archive_->members()) {
    ASSERT_TRUE(m.deflated && !m.stored) << m.name;
    const auto stream = archive_->deflated_in_place(mapped(), m);
    ASSERT_TRUE(stream.has_value());
    EXPECT_EQ(stream->size(), m.compressed);
    EXPECT_LT(m.compressed, m.size);
    // The local header's name ends where the stream starts (no extra field here).
    const std::string name(reinterpret_cast<const char*>(stream->data()) - m.name.size(),
                           m.name.size());
    EXPECT_EQ(name, m.name);
  }
}

TEST_F(InflatedMembersTest, MembersReadSideBySideInPiecesAreTheirBytes) {
  const auto in = members();
  std::vector<std::thread> threads;
  std::vector<std::string> failures(data_.size() * 2);
  for (size_t t = 0; t < failures.size(); ++t)
    threads.emplace_back([&, t] {
      // Two threads a member: one in 64 KiB pieces onwards, one from behind
      // it (starting the member over), each checking what it read.
      const size_t k = t % data_.size();
      const std::vector<uint8_t>& want = data_[k];
      const size_t piece = t < data_.size() ? 64 << 10 : 700 << 10;
      std::vector<uint8_t> got(piece);
      for (size_t at = 0; at < want.size(); at += piece) {
        const size_t n = std::min(piece, want.size() - at);
        const auto r = in->read(starts_[k] + at, std::span(got).first(n));
        if (!r.ok()) {
          failures[t] = r.error().message;
          return;
        }
        if (std::memcmp(got.data(), want.data() + at, n) != 0) {
          failures[t] = "member " + std::to_string(k) + " differs at " + std::to_string(at);
          return;
        }
      }
    });
  for (auto& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST_F(InflatedMembersTest, AReadAcrossMembersAndAReadFromBehindAreTheBytes) {
  const auto in = members();
  std::vector<uint8_t> all;
  for (const auto& d : data_) all.insert(all.end(), d.begin(), d.end());
  ASSERT_EQ(in->size(), all.size());
  std::vector<uint8_t> got(all.size());
  ASSERT_TRUE(in->read(0, got).ok());
  EXPECT_TRUE(got == all);
  // The middle of member 2, then its start again, then a read over its end into member 3.
  for (const auto& [at, n] : std::vector<std::pair<uint64_t, size_t>>{
           {starts_[2] + 1'000'000, 5000}, {starts_[2], 100}, {starts_[3] - 10, 20}}) {
    std::vector<uint8_t> part(n);
    ASSERT_TRUE(in->read(at, part).ok()) << at;
    EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + static_cast<ptrdiff_t>(at)));
  }
}

TEST(InflatedMembersBound, StreamsLeftPartWayAreBoundedWhateverTheMembersCount) {
  // The start of each of 100 members read (rows of each array): each read
  // leaves its member's stream open for the next piece, ~85 KiB apiece,
  // but no more than 32 of them; the rest of every member still reads.
  zt::test::TempDir dir("inflated-bound");
  const std::string path = dir.path() + "/a.npz";
  std::vector<std::vector<uint8_t>> data;
  for (unsigned k = 0; k < 100; ++k) data.push_back(member_bytes(70'000, k));
  write_deflated(path, data);
  auto a = ZipArchive::open(path);
  ASSERT_TRUE(a.ok()) << a.error().message;
  const auto archive = std::make_shared<const ZipArchive>(std::move(*a));
  auto file = zt::Source::open_file(path, zt::Source::Mode::map);
  ASSERT_TRUE(file.ok());
  const std::span<const uint8_t> mapped(file->base(), file->size());
  InflatedMembers in(archive, path);
  std::vector<uint64_t> starts;
  for (const ZipMember& m : archive->members())
    starts.push_back(in.add(m, m.name, archive->deflated_in_place(mapped, m)));
  std::vector<uint8_t> head(1000), rest(69'000);
  for (size_t k = 0; k < data.size(); ++k) {
    ASSERT_TRUE(in.read(starts[k], head).ok()) << k;
    EXPECT_TRUE(std::equal(head.begin(), head.end(), data[k].begin())) << k;
    EXPECT_LE(in.open_streams(), 32u) << k;
  }
  EXPECT_EQ(in.open_streams(), 32u);
  for (size_t k = 0; k < data.size(); ++k) {
    ASSERT_TRUE(in.read(starts[k] + 1000, rest).ok()) << k;
    EXPECT_TRUE(std::equal(rest.begin(), rest.end(), data[k].begin() + 1000)) << k;
  }
  EXPECT_EQ(in.open_streams(), 0u);
}

TEST_F(InflatedMembersTest, AStatedSizeOrCrcTheStreamDoesNotBearIsRefusedAtTheMembersEnd) {
  struct Case {
    void (*edit)(ZipMember&);
    const char* message;
  };
  for (const Case& c : {Case{[](ZipMember& m) { m.crc ^= 1; }, "CRC-32 mismatch"},
                        Case{[](ZipMember& m) { m.size -= 1; }, "holds more than the"},
                        Case{[](ZipMember& m) { m.size += 1; }, "ends after"}}) {
    starts_.clear();
    const auto in = members(c.edit);
    std::vector<uint8_t> got(static_cast<size_t>(in->size() - starts_[3]));
    const auto r = in->read(starts_[3], got);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.error().status, zt::Status::format);
    EXPECT_NE(r.error().message.find("member m3: "), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
    // Refused again when asked again, not served from a stream left behind.
    EXPECT_FALSE(in->read(starts_[3], got).ok());
  }
}

TEST_F(InflatedMembersTest, ADamagedStreamIsRefusedAndTheOtherMembersRead) {
  // Bytes in the middle of member 1's stream overwritten in the file.
  const ZipMember& m1 = archive_->members()[1];
  const uint64_t at =
      static_cast<uint64_t>(archive_->deflated_in_place(mapped(), m1)->data() - file_.base()) +
      m1.compressed / 2;
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    const std::string junk(64, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  open();
  const auto in = members();
  std::vector<uint8_t> got(data_[1].size());
  const auto r = in->read(starts_[1], got);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, zt::Status::format);
  EXPECT_NE(r.error().message.find("member m1: "), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("cannot decompress"), std::string::npos) << r.error().message;
  for (const size_t k : {0u, 2u, 3u}) {
    std::vector<uint8_t> ok(data_[k].size());
    ASSERT_TRUE(in->read(starts_[k], ok).ok()) << k;
    EXPECT_TRUE(ok == data_[k]) << k;
  }
}

// An .npy image (format 1.0) of n bytes of u1 elements.
std::vector<uint8_t> npy_of(const std::vector<uint8_t>& elements) {
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (" +
                     std::to_string(elements.size()) + ",), }";
  dict.append(63 - (10 + dict.size()) % 64, ' ');
  dict += '\n';
  std::vector<uint8_t> out = {0x93,
                              'N',
                              'U',
                              'M',
                              'P',
                              'Y',
                              1,
                              0,
                              static_cast<uint8_t>(dict.size() & 0xFF),
                              static_cast<uint8_t>(dict.size() >> 8)};
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), elements.begin(), elements.end());
  return out;
}

// An npz of u1 arrays of the given sizes: deflated members m0.npy, m1.npy...
struct Npz {
  zt::test::TempDir dir{"inflated-npz"};
  std::string path = dir.path() + "/a.npz";
  std::vector<std::vector<uint8_t>> elements, images;

  explicit Npz(const std::vector<size_t>& sizes) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      elements.push_back(member_bytes(sizes[k], static_cast<unsigned>(10 + k)));
      images.push_back(npy_of(elements.back()));
    }
    write_deflated(path, images, ".npy");
  }
  // One request an array, whole, into out (filled with 0xEE first).
  std::vector<zt::DecodeRequest> requests(std::vector<std::vector<uint8_t>>& out) const {
    out.assign(elements.size(), {});
    std::vector<zt::DecodeRequest> q(elements.size());
    for (size_t i = 0; i < q.size(); ++i) {
      out[i].assign(elements[i].size(), 0xEE);
      q[i].object = i;
      q[i].dst = out[i];
    }
    return q;
  }
};

TEST(InflatedMembersPlan, ADeflatedMemberIsOneTaskReadAsOneStream) {
  // Cut into pieces for threads, a member's pieces would wait for one
  // another (and a later piece inflate the earlier ones first): each
  // deflated member is one task, and the members' tasks run side by side.
  const Npz npz({24u << 20, (24u << 20) + 4096, (24u << 20) + 8192});
  auto r = zt::foreign::open_foreign(npz.path, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<std::vector<uint8_t>> out;
  std::vector<zt::DecodeRequest> q = npz.requests(out);
  const zt::batch::Plan p = zt::batch::plan_batch(**r, q, 16);
  ASSERT_EQ(p.tasks.size(), npz.elements.size());
  for (const auto& t : p.tasks)
    EXPECT_EQ(t.dst.size(), npz.elements[t.request].size()) << t.request;
  ASSERT_TRUE(zt::decode_many(**r, q, 16).ok());
  for (size_t i = 0; i < q.size(); ++i) EXPECT_TRUE(out[i] == npz.elements[i]) << i;
}

TEST(InflatedMembersSmall, SmallMembersAreInflatedAtOpenOnEveryCoreAndChecked) {
  // Members of 64 KiB or less are inflated at open (their .npy header is
  // most of them): by ISA-L from the mapping, side by side. Their values
  // are the arrays'; a damaged one refuses the open naming it.
  std::vector<size_t> sizes;
  for (size_t k = 0; k < 40; ++k) sizes.push_back(1000 + 1500 * k);
  const Npz npz(sizes);
  const std::string& path = npz.path;
  {
    auto r = zt::foreign::open_foreign(path, {});
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::vector<std::vector<uint8_t>> out;
    std::vector<zt::DecodeRequest> q = npz.requests(out);
    ASSERT_TRUE(zt::decode_many(**r, q, 4).ok());
    for (size_t i = 0; i < q.size(); ++i) EXPECT_TRUE(out[i] == npz.elements[i]) << i;
  }
  // The whole member through inflate_member, then its stream damaged.
  auto a = ZipArchive::open(path);
  ASSERT_TRUE(a.ok());
  auto file = zt::Source::open_file(path, zt::Source::Mode::map);
  ASSERT_TRUE(file.ok());
  const ZipMember m = a->members()[30];
  const auto stream = a->deflated_in_place({file->base(), file->size()}, m);
  ASSERT_TRUE(stream.has_value());
  const auto whole = zt::foreign::inflate_member(*stream, m, "member m30");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_TRUE(*whole == npz.images[30]);
  const uint64_t at = static_cast<uint64_t>(stream->data() - file->base()) + m.compressed / 2;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    const std::string junk(32, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto damaged = zt::foreign::open_foreign(path, {});
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().status, zt::Status::format);
  EXPECT_NE(damaged.error().message.find("member \"m30.npy\": "), std::string::npos)
      << damaged.error().message;
}

}  // namespace
