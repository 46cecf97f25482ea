// Shared by fuzz_format_npz and fuzz_format_pytorch: an input that
// describes the members of a zip archive, which libzip builds here with
// valid checksums, so that mutations reach the members and their names
// instead of dying at a CRC check:
//
//   member := flags:u8  name_length:u8  name  data_length:u16le  data
//
// repeated to the end of the input (at most 16 members; a name or data cut
// short by the end of the input is kept as it is). Bit 0 of flags: deflate
// the member (else store it). A member libzip refuses to add (a duplicate
// name, say) is skipped.
#pragma once

#include <zip.h>

#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"

namespace zt::fuzz {

struct Member {
  bool deflate = false;
  std::string name;
  std::vector<uint8_t> data;
};

inline std::vector<Member> parse_members(const uint8_t* data, size_t size) {
  zt::fuzz::ByteReader in(data, size);
  std::vector<Member> members;
  while (!in.empty() && members.size() < 16) {
    Member m;
    m.deflate = (in.u8() & 1) != 0;
    m.name = in.text(in.u8());
    m.data = in.bytes(in.u16());
    members.push_back(std::move(m));
  }
  return members;
}

// The archive libzip writes for `members`, or nothing if libzip fails.
inline std::vector<uint8_t> build_archive(const std::vector<Member>& members) {
  zip_error_t err;
  zip_error_init(&err);
  const std::unique_ptr<zip_source_t, void (*)(zip_source_t*)> out(
      zip_source_buffer_create(nullptr, 0, 0, &err), zip_source_free);
  zip_error_fini(&err);
  if (!out) return {};
  zip_source_keep(out.get());  // survives zip_close, which writes into it
  zip_error_init(&err);
  zip_t* archive = zip_open_from_source(out.get(), ZIP_TRUNCATE, &err);
  zip_error_fini(&err);
  if (!archive) {
    zip_source_free(out.get());  // the reference zip_open_from_source did not take
    return {};
  }
  for (const Member& m : members) {
    zip_source_t* src = zip_source_buffer(archive, m.data.data(), m.data.size(), 0);
    if (!src) continue;
    const zip_int64_t index = zip_file_add(archive, m.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(src);
      continue;
    }
    zip_set_file_compression(archive, static_cast<zip_uint64_t>(index),
                             m.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(archive) != 0) {
    zip_discard(archive);
    return {};
  }

  std::vector<uint8_t> bytes;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_source_stat(out.get(), &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) return {};
  if (zip_source_open(out.get()) != 0) return {};
  bytes.resize(st.size);
  const zip_int64_t got = zip_source_read(out.get(), bytes.data(), bytes.size());
  zip_source_close(out.get());
  if (got < 0 || static_cast<zip_uint64_t>(got) != st.size) return {};
  return bytes;
}

}  // namespace zt::fuzz
