// Walks everything an open reader offers through the C ABI and checks the
// contract on the way: the manifest JSON parses and agrees with the
// accessors; every component maps, reads into a buffer one byte too small
// (refused, nothing written past it: ASan watches) and into one of the right
// size (the same bytes as the mapping); the mapping is stable; verify agrees
// with what mapping found; every failure has a documented status and a
// message. Parsing alone finds little: the bugs live where data is touched.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "walk_views.h"
#include "ztensor.h"

// Batch decode is newer than the rest of the ABI: referenced weakly, so the
// walk also builds against a library without it (and then skips it).
#pragma weak zt_decode_many
#pragma weak zt_decode_request_init

namespace zt::fuzz {

// What one component gave, for comparing two readers of the same bytes.
struct ComponentOutcome {
  std::string role;
  bool skipped = false;  // declared decoded size over the walk's cap
  zt_status map_status = ZT_OK;
  uint64_t size = 0;
  uint64_t hash = 0;
};

struct WalkOutcome {
  std::string version;
  std::string manifest_json;
  std::vector<std::vector<ComponentOutcome>> objects;
  std::vector<std::string> names;  // of objects, in the same order
  bool verify_run = false;
  zt_status verify_status = ZT_OK;
};

struct WalkOptions {
  bool views = true;  // walk the typed views (walk_views.h)
  // Components declaring more decoded bytes than this are not mapped or
  // read by the memory reader (zt_open_memory has no cap option): keeps
  // executions fast. The copy-mode reader maps them under a cap this low.
  uint64_t decode_cap = uint64_t{16} << 20;
  bool copy_mode = false;  // ZT_ERR_IO is a possible outcome
  // Parts live in shard files: ZT_ERR_IO and ZT_ERR_FORMAT are possible
  // outcomes of any data access (g_walk_reads_shards).
  bool reads_shards = false;
  // A foreign file opened with allow_foreign: its version is "".
  bool foreign = false;
};

inline uint64_t fnv1a(const void* p, uint64_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t h = 1469598103934665603ull;
  for (uint64_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

inline std::string status_text(zt_status s) {
  return std::string(zt_status_name(s)) + ": " + zt_last_error();
}

inline bool one_of(zt_status s, std::initializer_list<zt_status> allowed) {
  for (const zt_status a : allowed)
    if (s == a) return true;
  return false;
}

// A failing call must explain itself.
inline void check_failure(zt_status s, std::initializer_list<zt_status> allowed, bool copy_mode,
                          const char* call) {
  FUZZ_CHECK(s != ZT_OK, std::string(call));
  FUZZ_CHECK(one_of(s, allowed) || file_failure(s, copy_mode),
             std::string(call) + " returned an undocumented status " + status_text(s));
  FUZZ_CHECK(zt_last_error()[0] != '\0',
             std::string(call) + " failed with an empty message: " + zt_status_name(s));
}

// A JSON text and the C string the ABI gives for it say the same.
inline bool same_text(const nlohmann::json& j, const char* c) {
  if (!j.is_string() || !c) return false;
  // Texts with NUL bytes are refused at open (finding F3), so the C
  // string is the whole text.
  return j.get_ref<const std::string&>() == c;
}

// The manifest JSON must parse and say what the accessors say.
inline void check_manifest_json(const zt_reader* r, const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  FUZZ_CHECK(!j.is_discarded(), "zt_manifest_json is not JSON: " + text.substr(0, 500));
  FUZZ_CHECK(j.is_object() && j.contains("version") && j["version"].is_string(),
             "no version: " + text.substr(0, 300));
  FUZZ_CHECK(same_text(j["version"], zt_file_version(r)),
             "JSON version differs from zt_file_version");
  FUZZ_CHECK(j.contains("objects") && j["objects"].is_object(), "no objects map");
  const auto& objs = j["objects"];
  const size_t n = zt_object_count(r);
  FUZZ_CHECK(objs.size() == n, "JSON has " + std::to_string(objs.size()) +
                                   " objects, zt_object_count " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const std::string name = zt_object_name(r, i);
    FUZZ_CHECK(objs.contains(name), "object \"" + name + "\" is missing from the JSON");
    const auto& o = objs[name];
    FUZZ_CHECK(o.contains("format") && same_text(o["format"], zt_object_format(r, i)),
               "format differs for " + name);
    size_t ndim = 0;
    const uint64_t* shape = zt_object_shape(r, i, &ndim);
    FUZZ_CHECK(o.contains("shape") && o["shape"].is_array() && o["shape"].size() == ndim,
               "rank differs for " + name);
    for (size_t d = 0; d < ndim; ++d)
      FUZZ_CHECK(o["shape"][d] == shape[d],
                 "dimension " + std::to_string(d) + " differs for " + name);
    FUZZ_CHECK(o.contains("components") && o["components"].is_object(),
               "no components map for " + name);
    const auto& comps = o["components"];
    FUZZ_CHECK(comps.size() == zt_component_count(r, i), "component count differs for " + name);
    for (size_t k = 0; k < zt_component_count(r, i); ++k) {
      const char* role = zt_component_role(r, i, k);
      FUZZ_CHECK(role && comps.contains(role), "component missing from the JSON in " + name);
      const auto& c = comps[role];
      FUZZ_CHECK(c["dtype"] == zt_component_dtype(r, i, role),
                 "dtype differs for " + name + "/" + role);
      const char* type = zt_component_type(r, i, role);
      FUZZ_CHECK(c.contains("type") ? same_text(c["type"], type) : type == nullptr,
                 "type differs for " + name + "/" + role);
      const char* enc = zt_component_encoding(r, i, role);
      FUZZ_CHECK(c.contains("encoding") ? same_text(c["encoding"], enc) : std::string(enc) == "raw",
                 "encoding differs for " + name + "/" + role);
      uint64_t stored = 0;
      FUZZ_CHECK(zt_component_stored_size(r, i, role, &stored) == ZT_OK,
                 status_text(ZT_ERR_INVALID));
      FUZZ_CHECK(c["length"] == stored, "length differs for " + name + "/" + role);
    }
  }
}

inline ComponentOutcome walk_component(const zt_reader* r, size_t i, const char* role,
                                       const WalkOptions& opt) {
  ComponentOutcome out;
  out.role = role;
  const std::string where = std::string(zt_object_name(r, i)) + "/" + role;
  FUZZ_CHECK(zt_component_dtype(r, i, role) != nullptr, "no dtype for " + where);
  FUZZ_CHECK(zt_component_encoding(r, i, role) != nullptr, "no encoding for " + where);
  (void)zt_component_type(r, i, role);

  uint64_t decoded = 0;
  const zt_status ds = zt_component_decoded_size(r, i, role, &decoded);
  FUZZ_CHECK(ds == ZT_OK || ds == ZT_ERR_UNSUPPORTED,
             "zt_component_decoded_size: " + status_text(ds));
  const bool known = ds == ZT_OK;
  if (known && decoded > opt.decode_cap) {
    out.skipped = true;
    return out;
  }
  FUZZ_CHECK(zt_prefetch(r, i, role) == ZT_OK, "zt_prefetch " + where);

  const void* p = nullptr;
  uint64_t n = 0;
  out.map_status = zt_component_map(r, i, role, &p, &n);
  if (out.map_status != ZT_OK) {
    check_failure(out.map_status, {ZT_ERR_UNSUPPORTED, ZT_ERR_LIMIT, ZT_ERR_INVALID, ZT_ERR_NOMEM},
                  opt.copy_mode, "zt_component_map");
    // A failing decode fails into a buffer of any size too.
    const uint64_t cap = known && decoded <= (uint64_t{16} << 20) ? decoded : 4096;
    std::unique_ptr<uint8_t[]> buf(new uint8_t[cap ? cap : 1]);
    uint64_t written = 0;
    const zt_status rs = zt_component_read(r, i, role, buf.get(), cap, &written);
    // Unless the map's failure was a read that failed (a transient fault
    // of a source is not remembered: the next call reads again).
    FUZZ_CHECK(rs != ZT_OK || out.map_status == ZT_ERR_IO,
               "zt_component_read succeeded where zt_component_map failed (" +
                   status_text(out.map_status) + ") for " + where);
    return out;
  }
  FUZZ_CHECK(p != nullptr || n == 0, "zt_component_map gave NULL for " + where);
  if (known)
    FUZZ_CHECK(n == decoded, "mapped " + std::to_string(n) + " bytes, decoded size says " +
                                 std::to_string(decoded) + " for " + where);
  out.size = n;
  out.hash = fnv1a(p, n);  // touches every byte

  // The cache hands out the same bytes every time.
  const void* p2 = nullptr;
  uint64_t n2 = 0;
  FUZZ_CHECK(zt_component_map(r, i, role, &p2, &n2) == ZT_OK && p2 == p && n2 == n,
             "second zt_component_map differs for " + where);

  // One byte too small: refused, and nothing written (ASan guards the end).
  if (n > 0) {
    std::unique_ptr<uint8_t[]> small(new uint8_t[n - 1 ? n - 1 : 1]);
    uint64_t written = 12345;
    const zt_status rs =
        zt_component_read(r, i, role, n - 1 ? small.get() : nullptr, n - 1, &written);
    FUZZ_CHECK(rs == ZT_ERR_ARGUMENT || file_failure(rs, opt.copy_mode),
               "zt_component_read into " + std::to_string(n - 1) + " bytes: " + status_text(rs) +
                   " for " + where);
    FUZZ_CHECK(written == 12345, "zt_component_read wrote *written on failure for " + where);
  }
  // Right size: the same bytes as the mapping.
  std::unique_ptr<uint8_t[]> exact(new uint8_t[n ? n : 1]);
  uint64_t written = 0;
  const zt_status rs = zt_component_read(r, i, role, n ? exact.get() : nullptr, n, &written);
  FUZZ_CHECK(rs == ZT_OK || file_failure(rs, opt.copy_mode),
             "zt_component_read: " + status_text(rs) + " for " + where);
  if (rs == ZT_OK) {
    FUZZ_CHECK(written == n,
               "zt_component_read wrote " + std::to_string(written) + " of " + std::to_string(n));
    FUZZ_CHECK(n == 0 || std::memcmp(exact.get(), p, n) == 0, "read and map disagree for " + where);
  }
  FUZZ_CHECK(zt_evict(r, i, role) == ZT_OK, "zt_evict " + where);
  return out;
}

// A name that `taken` does not accept (the fuzzer learns any fixed string).
template <typename Taken>
std::string absent_name(Taken&& taken) {
  std::string n =
      "\x01"
      "absent";
  while (taken(n.c_str())) n += '~';
  return n;
}

// Calls that must fail cleanly whatever the file holds.
inline void poke_out_of_range(const zt_reader* r) {
  const size_t n = zt_object_count(r);
  FUZZ_CHECK(zt_object_name(r, n) == nullptr && zt_object_format(r, n) == nullptr,
             "object past the end");
  size_t ndim = 7;
  FUZZ_CHECK(zt_object_shape(r, n, &ndim) == nullptr && ndim == 0, "shape past the end");
  FUZZ_CHECK(zt_component_count(r, n) == 0, "components past the end");
  const void* p = nullptr;
  uint64_t sz = 0;
  FUZZ_CHECK(zt_component_map(r, n, "data", &p, &sz) == ZT_ERR_NOT_FOUND, "map past the end");
  if (n > 0) {
    FUZZ_CHECK(zt_component_role(r, 0, zt_component_count(r, 0)) == nullptr, "role past the end");
    const std::string role = absent_name([&](const char* s) {
      for (size_t k = 0; k < zt_component_count(r, 0); ++k)
        if (std::strcmp(zt_component_role(r, 0, k), s) == 0) return true;
      return false;
    });
    FUZZ_CHECK(zt_component_map(r, 0, role.c_str(), &p, &sz) == ZT_ERR_NOT_FOUND, "unknown role");
    FUZZ_CHECK(zt_component_map(r, 0, nullptr, &p, &sz) == ZT_ERR_ARGUMENT, "NULL role");
  }
  size_t idx = 0;
  const std::string name = absent_name([&](const char* s) {
    for (size_t i = 0; i < n; ++i)
      if (std::strcmp(zt_object_name(r, i), s) == 0) return true;
    return false;
  });
  FUZZ_CHECK(zt_object_find(r, name.c_str(), &idx) == ZT_ERR_NOT_FOUND, "unknown object");
}

// zt_decode_many over every component the walk mapped: the same bytes.
inline void walk_batch(const zt_reader* r, const WalkOutcome& w, const WalkOptions& opt) {
  if (!zt_decode_many || !zt_decode_request_init) return;
  std::vector<zt_decode_request> reqs;
  std::vector<std::unique_ptr<uint8_t[]>> bufs;
  std::vector<const ComponentOutcome*> expect;
  for (size_t i = 0; i < w.objects.size(); ++i)
    for (const ComponentOutcome& c : w.objects[i]) {
      if (c.skipped || c.map_status != ZT_OK) continue;
      zt_decode_request q;
      zt_decode_request_init(&q);
      q.object = i;
      q.role = zt_component_role(r, i, &c - w.objects[i].data());
      bufs.emplace_back(new uint8_t[c.size ? c.size : 1]);
      q.dst = c.size ? bufs.back().get() : nullptr;
      q.capacity = c.size;
      reqs.push_back(q);
      expect.push_back(&c);
    }
  const zt_status s = zt_decode_many(r, reqs.data(), reqs.size(), 2);
  for (size_t k = 0; k < reqs.size(); ++k) {
    const zt_status rs = static_cast<zt_status>(reqs[k].status);
    if (file_failure(rs, opt.copy_mode)) continue;
    FUZZ_CHECK(rs == ZT_OK, std::string("zt_decode_many failed where zt_component_map did not: ") +
                                zt_status_name(rs) + ": " + zt_last_error());
    FUZZ_CHECK(reqs[k].written == expect[k]->size &&
                   fnv1a(bufs[k].get(), reqs[k].written) == expect[k]->hash,
               "zt_decode_many decoded other bytes than zt_component_map for " + expect[k]->role);
  }
  FUZZ_CHECK(s == ZT_OK || opt.copy_mode || opt.reads_shards,
             std::string("zt_decode_many: ") + zt_status_name(s));
}

// Walks an open reader; returns what it saw.
inline WalkOutcome walk_reader(const zt_reader* r, const WalkOptions& opt) {
  g_walk_reads_shards = opt.reads_shards;
  WalkOutcome w;
  const char* version = zt_file_version(r);
  FUZZ_CHECK(version && (*version || opt.foreign), "empty version");
  const char* format = zt_file_format(r);
  FUZZ_CHECK(format && (std::string(format) == "zt") != opt.foreign,
             std::string("zt_file_format says ") + (format ? format : "NULL"));
  w.version = version;
  const char* json = zt_manifest_json(r);
  FUZZ_CHECK(json != nullptr, "zt_manifest_json returned NULL");
  w.manifest_json = json;
  FUZZ_CHECK(std::string(zt_manifest_json(r)) == w.manifest_json, "zt_manifest_json changed");
  check_manifest_json(r, w.manifest_json);

  const size_t n = zt_object_count(r);
  bool any_skipped = false;
  std::set<size_t> failed_maps;
  for (size_t i = 0; i < n; ++i) {
    const char* name = zt_object_name(r, i);
    FUZZ_CHECK(name != nullptr, "object without a name");
    size_t found = SIZE_MAX;
    FUZZ_CHECK(zt_object_find(r, name, &found) == ZT_OK && found == i,
               "zt_object_find(\"" + std::string(name) + "\") does not give " + std::to_string(i));
    FUZZ_CHECK(zt_object_format(r, i) != nullptr, "object without a format");
    size_t ndim = 0;
    const uint64_t* shape = zt_object_shape(r, i, &ndim);
    FUZZ_CHECK(ndim <= 64, "rank " + std::to_string(ndim) + " over the limit");
    FUZZ_CHECK(ndim == 0 || shape != nullptr, "NULL shape");
    w.objects.emplace_back();
    w.names.emplace_back(name);
    bool object_skipped = false;
    for (size_t k = 0; k < zt_component_count(r, i); ++k) {
      const char* role = zt_component_role(r, i, k);
      FUZZ_CHECK(role != nullptr, "component without a role");
      ComponentOutcome c = walk_component(r, i, role, opt);
      object_skipped |= c.skipped;
      // zt_verify passes only files whose every component can be read
      // (finding F5: it once passed 0.1.0 sparse-layout blobs).
      // A failed read (ZT_ERR_IO) is the source's, not the file's.
      if (!c.skipped && c.map_status != ZT_OK && c.map_status != ZT_ERR_IO) failed_maps.insert(i);
      w.objects.back().push_back(std::move(c));
    }
    any_skipped |= object_skipped;
    if (opt.views && !object_skipped) walk_object_views(r, i, opt.copy_mode);
  }
  poke_out_of_range(r);
  walk_batch(r, w, opt);

  if (!any_skipped) {
    uint64_t checked = 0, unchecked = 0;
    w.verify_run = true;
    w.verify_status = zt_verify(r, &checked, &unchecked);
    if (w.verify_status == ZT_OK) {
      uint64_t total = 0;
      for (size_t i = 0; i < n; ++i) total += zt_component_count(r, i);
      FUZZ_CHECK(checked + unchecked == total, "zt_verify counted " +
                                                   std::to_string(checked + unchecked) + " of " +
                                                   std::to_string(total) + " components");
      FUZZ_CHECK(failed_maps.empty(), "zt_verify passed although a component failed to map");
    } else {
      check_failure(w.verify_status,
                    {ZT_ERR_DIGEST, ZT_ERR_INVALID, ZT_ERR_UNSUPPORTED, ZT_ERR_LIMIT, ZT_ERR_NOMEM},
                    opt.copy_mode, "zt_verify");
    }
  }
  return w;
}

// Two readers of the same objects (the same file, or a file and its
// conversion) must agree on every component both looked at.
// Objects and components are matched by name and role: a v2 file lists
// both sorted, a foreign file as its reader found them.
inline void compare_components(const WalkOutcome& a, const WalkOutcome& b) {
  FUZZ_CHECK(a.objects.size() == b.objects.size(), "object counts differ");
  for (size_t i = 0; i < a.objects.size(); ++i) {
    const auto j = std::find(b.names.begin(), b.names.end(), a.names[i]) - b.names.begin();
    FUZZ_CHECK(static_cast<size_t>(j) < b.names.size(), "object \"" + a.names[i] + "\" missing");
    FUZZ_CHECK(a.objects[i].size() == b.objects[j].size(), "component counts differ");
    for (const ComponentOutcome& x : a.objects[i]) {
      const auto y_at = std::find_if(b.objects[j].begin(), b.objects[j].end(),
                                     [&](const ComponentOutcome& c) { return c.role == x.role; });
      FUZZ_CHECK(y_at != b.objects[j].end(), "component " + x.role + " missing");
      const ComponentOutcome& y = *y_at;
      if (x.skipped || y.skipped) continue;
      // Readers with different decode caps, or copy-mode I/O, may differ only there.
      if (x.map_status == ZT_ERR_IO || y.map_status == ZT_ERR_IO) continue;
      if (x.map_status == ZT_ERR_LIMIT || y.map_status == ZT_ERR_LIMIT) continue;
      FUZZ_CHECK(x.map_status == y.map_status, "component " + x.role + ": map status " +
                                                   zt_status_name(x.map_status) + " vs " +
                                                   zt_status_name(y.map_status));
      FUZZ_CHECK(x.size == y.size && x.hash == y.hash,
                 "component " + x.role + ": decoded bytes differ");
    }
  }
}

// Two readers of the same bytes must agree wherever both looked.
inline void compare_walks(const WalkOutcome& a, const WalkOutcome& b) {
  FUZZ_CHECK(a.version == b.version, "versions differ");
  FUZZ_CHECK(a.manifest_json == b.manifest_json, "manifest JSON differs between readers");
  compare_components(a, b);
}

}  // namespace zt::fuzz
