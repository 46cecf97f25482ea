// torch.save containers: the zip archive (torch >= 1.6) and the legacy
// stream of pickles (a magic number, the protocol, system info, the value,
// the storage keys, then the storages).
#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_set>

#include "base/arithmetic.h"
#include "base/byte_order.h"
#include "base/zt_limits.h"
#include "foreign/pickle.h"
#include "foreign/pytorch.h"
#include "foreign/pytorch_reader.h"
#include "foreign/zip_archive.h"

namespace zt::foreign {

using ull = unsigned long long;

namespace torch_reader {

Result<void> TorchReader::read_zip() {
  auto archive = ZipArchive::open(path_);
  ZT_TRY(archive);
  const ZipMember* pkl = nullptr;
  for (const ZipMember& m : archive->members()) {
    const size_t slash = m.name.find('/');
    if (slash == std::string::npos || m.name.substr(slash) != "/data.pkl") continue;
    ZT_FAIL_IF(pkl, format, "%s: two pickles (%s, %s): not one torch.save archive", path_.c_str(),
               pkl->name.c_str(), m.name.c_str());
    pkl = &m;
  }
  ZT_FAIL_IF(!pkl, format, "%s: a zip archive without PREFIX/data.pkl: not a torch.save file",
             path_.c_str());
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);  // "PREFIX/"
  const std::string where = path_ + ": " + pkl->name;
  ZT_FAIL_IF(pkl->size > Limits::manifest_bytes, limit, "%s: %llu bytes, more than the limit %llu",
             where.c_str(), static_cast<ull>(pkl->size), static_cast<ull>(Limits::manifest_bytes));
  bool& big_endian = big_endian_;
  if (const ZipMember* order = archive->find(prefix + "byteorder")) {
    ZT_FAIL_IF(order->size > 16, invalid, "%s: %s is not \"little\" or \"big\"", path_.c_str(),
               order->name.c_str());
    auto text = archive->read(*order, path_ + ": " + order->name);
    ZT_TRY(text);
    const std::string s(text->begin(), text->end());
    ZT_FAIL_IF(s != "little" && s != "big", invalid, "%s: %s is \"%s\", not \"little\" or \"big\"",
               path_.c_str(), order->name.c_str(), s.c_str());
    big_endian = s == "big";
  }
  // torch.save stores its members uncompressed (64-byte aligned): they are
  // viewed in the mapped file, a storage's CRC-32 checked at the first read
  // of its bytes (PendingCrc), not here: an open reads no tensor's data.
  auto src = Source::open_file(path_, Source::Mode::map);
  ZT_TRY(src);
  f_.source = std::move(*src);
  const auto in_place =
      archive->stored_in_place(std::span<const uint8_t>(f_.source.base(), f_.source.size()), false);
  // The pickle is read here: checked now.
  const auto member_bytes = [&](const ZipMember& m, const std::string& w,
                                bool pending = false) -> Result<std::span<const uint8_t>> {
    const auto k = static_cast<size_t>(&m - archive->members().data());
    if (in_place[k]) {
      if (pending) {
        f_.crc_checks.push_back(PendingCrc{*in_place[k], m.crc, w});
      } else {
        ZT_TRY(check_member_crc(*in_place[k], m.crc, w, Status::format));
      }
      return *in_place[k];
    }
    auto copy = archive->read(m, w, limit_);
    ZT_TRY(copy);
    f_.owned.push_back(std::move(*copy));
    return std::span<const uint8_t>(f_.owned.back());
  };
  auto bytes = member_bytes(*pkl, where);
  ZT_TRY(bytes);
  uint64_t pos = 0;
  auto root = pickle_.run(*bytes, pos, where);
  ZT_TRY(root);
  ZT_FAIL_IF(pos != bytes->size(), invalid, "%s: %llu bytes follow the pickle's STOP",
             where.c_str(), static_cast<ull>(bytes->size() - pos));
  ZT_TRY(collect_storages(where));
  for (auto& [key, storage] : storages_) {
    const std::string name = prefix + "data/" + key;
    const ZipMember* m = archive->find(name);
    ZT_FAIL_IF(!m, invalid, "%s: storage \"%s\" has no member %s", path_.c_str(), key.c_str(),
               name.c_str());
    const std::string w = path_ + ": " + name;
    const auto need = checked_mul(storage.numel, storage.type->width);
    ZT_FAIL_IF(!need || *need != m->size, invalid,
               "%s: %llu bytes, but %llu elements of torch.%s need %llu", w.c_str(),
               static_cast<ull>(m->size), static_cast<ull>(storage.numel),
               std::string(storage.type->name).c_str(),
               static_cast<ull>(need.value_or(UINT64_MAX)));
    const size_t checks = f_.crc_checks.size();
    auto data = member_bytes(*m, w, true);
    ZT_TRY(data);
    storage.bytes = *data;
    if (f_.crc_checks.size() > checks) storage.crc_check = static_cast<uint32_t>(checks);
    if (big_endian && swap_width(*storage.type) > 1) {
      ZT_TRY(check_now(storage));
      ZT_FAIL_IF(data->size() > limit_, limit,
                 "%s: %zu bytes to reorder (big-endian), more than the limit %llu", w.c_str(),
                 data->size(), static_cast<ull>(limit_));
      std::vector<uint8_t> swapped(data->begin(), data->end());
      swap_elements(swapped, swap_width(*storage.type));
      f_.owned.push_back(std::move(swapped));
      storage.bytes = f_.owned.back();
    }
  }
  return walk(*root, "", 0);
}

Result<void> TorchReader::check_now(const Storage& s) {
  if (!s.crc_check) return {};
  PendingCrc& p = f_.crc_checks[*s.crc_check];
  if (!p.checked) {
    ZT_TRY(check_member_crc(p.bytes, p.crc, p.where, Status::format));
    p.checked = true;
  }
  return {};
}

// The first pickle of a legacy file: 0x1950a86a20f9469cfc6c as a Python int.
constexpr uint8_t kLegacyMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocol = 1001;

Result<void> TorchReader::read_legacy() {
  auto src = Source::open_file(path_, Source::Mode::map);
  ZT_TRY(src);
  f_.source = std::move(*src);
  const std::span<const uint8_t> bytes(f_.source.base(), f_.source.size());
  const char* p = path_.c_str();
  uint64_t pos = 0;
  auto magic = pickle_.run(bytes, pos, path_ + ": magic number");
  ZT_TRY(magic);
  const PickleValue& m = pickle_.at(*magic);
  ZT_FAIL_IF(m.kind != PickleKind::big_integer || m.text.size() != sizeof kLegacyMagic ||
                 std::memcmp(m.text.data(), kLegacyMagic, sizeof kLegacyMagic) != 0,
             format, "%s: a pickle without torch.save's magic number: not a PyTorch checkpoint", p);
  auto protocol = pickle_.run(bytes, pos, path_ + ": protocol version");
  ZT_TRY(protocol);
  const PickleValue& v = pickle_.at(*protocol);
  ZT_FAIL_IF(v.kind != PickleKind::integer || v.integer != kLegacyProtocol, unsupported,
             "%s: legacy torch.save protocol %s (1001 is read)", p,
             v.kind == PickleKind::integer ? std::to_string(v.integer).c_str() : "?");
  auto info = pickle_.run(bytes, pos, path_ + ": system info");
  ZT_TRY(info);
  bool little_endian = true;
  const PickleValue& sys = pickle_.at(*info);
  ZT_FAIL_IF(sys.kind != PickleKind::dict, invalid, "%s: the system info is not a dict", p);
  for (size_t i = 0; i + 1 < sys.items.size(); i += 2) {
    const PickleValue& k = pickle_.at(sys.items[i]);
    const PickleValue& x = pickle_.at(sys.items[i + 1]);
    if (k.kind == PickleKind::text && k.text == "little_endian") {
      ZT_FAIL_IF(x.kind != PickleKind::boolean, invalid, "%s: little_endian is not a bool", p);
      little_endian = x.truth;
    }
  }
  const std::string where = path_ + ": the saved object";
  auto root = pickle_.run(bytes, pos, where);
  ZT_TRY(root);
  auto keys = pickle_.run(bytes, pos, path_ + ": storage keys");
  ZT_TRY(keys);
  ZT_TRY(collect_storages(where));
  const std::vector<uint32_t> order = pickle_.at(*keys).items;
  ZT_FAIL_IF(pickle_.at(*keys).kind != PickleKind::list, invalid,
             "%s: the storage keys are not a list", p);
  std::unordered_set<std::string> seen;
  for (const uint32_t k : order) {
    const PickleValue& key = pickle_.at(k);
    ZT_FAIL_IF(key.kind != PickleKind::text, invalid, "%s: a storage key is a %s", p,
               pickle_.describe(k).c_str());
    const auto it = storages_.find(key.text);
    ZT_FAIL_IF(it == storages_.end(), invalid, "%s: storage \"%s\" is not used by the object", p,
               key.text.c_str());
    ZT_FAIL_IF(!seen.insert(key.text).second, invalid, "%s: storage \"%s\" is listed twice", p,
               key.text.c_str());
    Storage& s = it->second;
    ZT_FAIL_IF(bytes.size() - pos < 8, format, "%s: storage \"%s\": the file ends at its size", p,
               key.text.c_str());
    uint64_t count = 0;
    for (int b = 0; b < 8; ++b)
      count |= uint64_t{bytes[pos + (little_endian ? b : 7 - b)]} << (8 * b);
    pos += 8;
    ZT_FAIL_IF(count != s.numel, invalid, "%s: storage \"%s\" holds %llu elements, the object %llu",
               p, key.text.c_str(), static_cast<ull>(count), static_cast<ull>(s.numel));
    const auto need = checked_mul(count, s.type->width);
    ZT_FAIL_IF(!need || *need > bytes.size() - pos, format,
               "%s: storage \"%s\": %llu elements of torch.%s go past the end of the file", p,
               key.text.c_str(), static_cast<ull>(count), std::string(s.type->name).c_str());
    s.bytes = bytes.subspan(pos, *need);
    pos += *need;
    if (!little_endian && swap_width(*s.type) > 1) {
      ZT_FAIL_IF(s.bytes.size() > limit_, limit,
                 "%s: storage \"%s\": %zu bytes to reorder (big-endian), more than the limit %llu",
                 p, key.text.c_str(), s.bytes.size(), static_cast<ull>(limit_));
      std::vector<uint8_t> swapped(s.bytes.begin(), s.bytes.end());
      swap_elements(swapped, swap_width(*s.type));
      f_.owned.push_back(std::move(swapped));
      s.bytes = f_.owned.back();
    }
  }
  for (const auto& [key, s] : storages_)
    ZT_FAIL_IF(!seen.contains(key), invalid, "%s: storage \"%s\" is used but not stored", p,
               key.c_str());
  ZT_FAIL_IF(pos != bytes.size(), invalid, "%s: %llu bytes follow the last storage", p,
             static_cast<ull>(bytes.size() - pos));
  return walk(*root, "", 0);
}

}  // namespace torch_reader

Result<ForeignFile> read_pytorch(const std::string& path, uint64_t limit) {
  ForeignFile f;
  f.kind = FileKind::pytorch;
  uint8_t head[4] = {};
  {
    auto probe = Source::open_file(path, Source::Mode::copy);
    ZT_TRY(probe);
    ZT_FAIL_IF(probe->size() < 4, format, "%s: %llu bytes is too short for a PyTorch checkpoint",
               path.c_str(), static_cast<ull>(probe->size()));
    ZT_TRY(probe->read_into(0, head));
  }
  torch_reader::TorchReader r(path, f, limit);
  if (head[0] == 'P' && head[1] == 'K') {
    ZT_TRY(r.read_zip());
  } else if (head[0] == 0x80) {
    ZT_TRY(r.read_legacy());
  } else {
    return make_error(Status::format,
                      "%s: neither a zip archive nor a pickle: not a torch.save checkpoint",
                      path.c_str());
  }
  return f;
}

}  // namespace zt::foreign
