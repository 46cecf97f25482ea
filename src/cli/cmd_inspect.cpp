// zt info, zt ls, zt dump, zt verify.
#include <cstdio>
#include <map>
#include <random>

#include "cbor/cbor_item.h"
#include "codec/digest.h"
#include "commands.h"
#include "input.h"
#include "json_layout.h"
#include "manifest/object_format.h"
#include "progress.h"
#include "read/content.h"

namespace zt::cli {

namespace {

using ull = unsigned long long;

std::string part_dtype(const Part& p) {
  std::string s(dtype_name(p.dtype));
  if (p.type) s += "/" + *p.type;
  return s;
}

std::string ratio_text(std::optional<uint64_t> decoded, uint64_t stored) {
  if (!decoded || stored == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx",
                static_cast<double>(*decoded) / static_cast<double>(stored));
  return buf;
}

std::string short_digest(const std::optional<std::string>& d) {
  if (!d) return "-";
  const size_t colon = d->find(':');
  if (colon != std::string::npos && d->size() - colon - 1 > 16)
    return d->substr(0, colon + 17) + "..";
  return *d;
}

// At most `max` bytes, cut on a character boundary (a cut inside a UTF-8
// sequence printed invalid text).
std::string clipped(std::string s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max - 3;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  s.resize(end);
  s += "...";
  return s;
}

// The value of text entry `key` of the CBOR map `map`, or "".
std::string text_entry(std::span<const uint8_t> map, std::string_view key) {
  const auto v = cbor::find_entry(map, key);
  if (!v || !*v) return {};
  const auto s = cbor::scalar(**v);
  return s && s->kind == cbor::Kind::text ? std::string(s->str) : std::string();
}

// The quantized checkpoint scheme an object came from ("gptq", "modelopt
// NVFP4", "compressed-tensors pack-quantized"), when it is a layer of one
// (it records its checkpoint tensors) and the file kept the config; "".
std::string checkpoint_scheme(const Input& in, const Item& it) {
  if (!it.has_attributes || !in.has_attributes) return {};
  const auto tensors = cbor::find_entry(it.attributes_cbor, "hf.tensors");
  const auto qc = cbor::find_entry(in.attributes_cbor, "hf.quantization_config");
  if (!tensors || !*tensors || !qc || !*qc) return {};
  std::string scheme = text_entry(**qc, "quant_method");
  for (const char* detail : {"quant_algo", "format"})
    if (const std::string d = text_entry(**qc, detail); !d.empty() && !scheme.empty())
      scheme += " " + d;
  return scheme;
}

// Whether the checkpoint config says act-order (GPTQ's desc_act).
bool act_order(const Input& in) {
  const auto qc = cbor::find_entry(in.attributes_cbor, "hf.quantization_config");
  if (!qc || !*qc) return false;
  const auto d = cbor::find_entry(**qc, "desc_act");
  if (!d || !*d) return false;
  const auto s = cbor::scalar(**d);
  return s && s->kind == cbor::Kind::boolean && s->flag;
}

// The object's type made of its listed attributes ("int4 g128"), or "".
std::string listed_text(const ObjectFormat& f, const Item& it) {
  if (f.listed_attributes.empty() || !it.has_attributes) return {};
  std::string text;
  for (const ListedAttribute& a : f.listed_attributes) {
    const auto v = cbor::find_entry(it.attributes_cbor, a.key);
    if (!v || !*v) return {};
    const auto s = cbor::scalar(**v);
    if (!a.when_zero.empty() && s && s->kind == cbor::Kind::uint && s->u == 0)
      text.append(a.when_zero);
    else if (!a.when_negative.empty() && s && s->kind == cbor::Kind::negint)
      text.append(a.when_negative);
    else
      text.append(a.prefix).append(attribute_text(**v, 20));
  }
  return text;
}

// The object row's dtype column: the component that carries the values,
// or the type its attributes say; a quantized checkpoint's layer leads with
// its scheme ("gptq int4 g128 act-order").
std::string object_dtype(const Input& in, const Item& it) {
  const ObjectFormat* f = it.descriptor;
  std::string text = f ? listed_text(*f, it) : std::string();
  if (text.empty()) {
    if (const Part* p = f ? it.find(f->listed_role) : nullptr) {
      text = part_dtype(*p);
    } else {
      // A format this library does not know: the first role any format lists.
      for (const ObjectFormat* g : object_formats())
        if (const Part* q = it.find(g->listed_role); q && text.empty()) text = part_dtype(*q);
      if (text.empty()) text = it.parts.empty() ? "-" : part_dtype(it.parts[0]);
    }
  }
  const std::string scheme = checkpoint_scheme(in, it);
  if (scheme.empty()) return text;
  return scheme + " " + text + (it.find("g_idx") && act_order(in) ? " act-order" : "");
}

struct Totals {
  uint64_t stored = 0, decoded = 0, components = 0;
  bool decoded_known = true;
};

Totals totals_of(const Input& in) {
  Totals t;
  for (const Item& it : in.items)
    for (const Part& p : it.parts) {
      t.stored += p.stored;
      t.components++;
      if (p.decoded)
        t.decoded += *p.decoded;
      else
        t.decoded_known = false;
    }
  return t;
}

// Attribute maps are not built as JSON trees in the info document: each is
// a placeholder string there, replaced in the printed text by the map's
// JSON written straight from its CBOR (cbor::append_json), at the indentation
// of the placeholder. A name or value of the file can hold any text, the
// placeholder's too: so the mark holds a token drawn for this run, which no
// file can know, and the placeholders are taken only in the order they were
// made.
class AttributeMaps {
 public:
  AttributeMaps() {
    std::random_device random;
    char hex[33];
    std::snprintf(hex, sizeof hex, "%08x%08x%08x%08x", random(), random(), random(), random());
    token_ = hex;
  }
  Json mark(std::span<const uint8_t> cbor) {
    if (cbor.empty()) return Json::object();
    maps_.push_back(cbor);
    return "\x01zt-attributes-" + token_ + "-" + std::to_string(maps_.size() - 1);
  }
  // How the mark of map `k` reads in dumped JSON text, quotes included.
  std::string printed(size_t k) const {
    return "\"\\u0001zt-attributes-" + token_ + "-" + std::to_string(k) + "\"";
  }
  size_t size() const { return maps_.size(); }
  std::span<const uint8_t> operator[](size_t k) const { return maps_[k]; }

 private:
  std::string token_;
  std::vector<std::span<const uint8_t>> maps_;
};

void print_and_clear(std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  text.clear();
}

// Prints `text` with each placeholder replaced, each map's text written as
// it is made (cbor::JsonStyle::drain): what is held is a piece of 64 KiB,
// whatever the attributes hold.
void print_with_attributes(const std::string& text, const AttributeMaps& maps, int indent) {
  std::string out;
  size_t from = 0;
  for (size_t k = 0; k < maps.size(); ++k) {
    const std::string mark = maps.printed(k);
    const size_t quote = text.find(mark, from);
    if (quote == std::string::npos) break;
    const size_t line = text.rfind('\n', quote);
    const size_t first = line == std::string::npos ? 0 : line + 1;
    const size_t spaces = text.find_first_not_of(' ', first) - first;
    out.append(text, from, quote - from);
    cbor::JsonStyle style;
    style.indent = indent;
    style.base_level = indent > 0 ? static_cast<unsigned>(spaces / static_cast<size_t>(indent)) : 0;
    style.drain = print_and_clear;
    if (!cbor::append_json(maps[k], out, style)) out += "null";
    print_and_clear(out);
    from = quote + mark.size();
  }
  out.append(text, from, std::string::npos);
  print_and_clear(out);
}

Json info_json(const Input& in, AttributeMaps& maps) {
  const Totals t = totals_of(in);
  Json j = Json::object();
  j["file"] = in.path;
  j["kind"] = std::string(foreign::kind_name(in.kind));
  if (in.kind == foreign::FileKind::zt) j["version"] = in.version;
  j["file_size"] = in.file_size;
  if (in.model_files != 1) {  // a model over several files: what it occupies
    j["model_files"] = in.model_files;
    j["model_size"] = in.model_size;
  }
  j["object_count"] = in.items.size();
  j["component_count"] = t.components;
  j["stored_bytes"] = t.stored;
  j["decoded_bytes"] = t.decoded_known ? Json(t.decoded) : Json(nullptr);
  j["attributes"] = maps.mark(in.attributes_cbor);
  Json objects = Json::array();
  for (const Item& it : in.items) {
    Json o = Json::object();
    o["name"] = it.name;
    o["format"] = it.format;
    o["shape"] = it.shape;
    if (it.has_attributes) o["attributes"] = maps.mark(it.attributes_cbor);
    Json comps = Json::array();
    for (const Part& p : it.parts) {
      Json c = Json::object();
      c["role"] = p.role;
      c["dtype"] = std::string(dtype_name(p.dtype));
      if (p.type) c["type"] = *p.type;
      c["encoding"] = p.encoding;
      c["stored_bytes"] = p.stored;
      c["decoded_bytes"] = p.decoded ? Json(*p.decoded) : Json(nullptr);
      c["digest"] = p.digest ? Json(*p.digest) : Json(nullptr);
      comps.push_back(std::move(c));
    }
    o["components"] = std::move(comps);
    objects.push_back(std::move(o));
  }
  j["objects"] = std::move(objects);
  return j;
}

// Cells are a file's text (names, formats, roles): shown as listed() shows
// them (control bytes as \xNN, backslashes doubled).
void print_table(std::vector<std::vector<std::string>> rows) {
  for (auto& r : rows)
    for (auto& cell : r) cell = listed(cell);
  std::vector<size_t> w;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (w.size() <= c) w.push_back(0);
      w[c] = std::max(w[c], r[c].size());
    }
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      // Numbers (stored, ratio) right-aligned, text left-aligned.
      const bool right = c == 5 || c == 6;
      const std::string pad(w[c] - r[c].size(), ' ');
      line += right ? pad + r[c] : r[c] + (c + 1 < r.size() ? pad : "");
      if (c + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

void print_info(const Input& in) {
  const Totals t = totals_of(in);
  std::printf("file        %s\n", in.path.c_str());
  if (in.kind == foreign::FileKind::zt)
    std::printf("format      zTensor %s\n", in.version.c_str());
  else
    std::printf("format      %s\n", in.version.c_str());
  if (in.model_files > 1)
    std::printf("size        %s (%s bytes) in %zu files\n", human_bytes(in.model_size).c_str(),
                grouped(in.model_size).c_str(), in.model_files);
  else
    std::printf("size        %s (%s bytes)\n", human_bytes(in.file_size).c_str(),
                grouped(in.file_size).c_str());
  std::printf("objects     %zu (%llu components)\n", in.items.size(),
              static_cast<ull>(t.components));
  std::printf("stored      %s (%s bytes)\n", human_bytes(t.stored).c_str(),
              grouped(t.stored).c_str());
  if (t.decoded_known)
    std::printf("decoded     %s (%s bytes), ratio %s\n", human_bytes(t.decoded).c_str(),
                grouped(t.decoded).c_str(), ratio_text(t.decoded, t.stored).c_str());
  else
    std::printf("decoded     unknown (a legacy zstd component does not state its size)\n");
  bool first = true;
  const auto shown = for_each_attribute(
      in.attributes_cbor, [&](std::string_view k, std::span<const uint8_t> v) -> Result<void> {
        std::printf("%s%s: %s\n", first ? "attributes  " : "            ", printable(k).c_str(),
                    clipped(attribute_text(v, 100), 100).c_str());
        first = false;
        return {};
      });
  if (first) std::printf("attributes  %s\n", shown ? "(none)" : "(unreadable)");
  if (in.items.empty()) return;
  std::printf("\n");
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"NAME", "FORMAT", "SHAPE", "DTYPE", "ENCODING", "STORED", "RATIO", "DIGEST"});
  for (const Item& it : in.items) {
    if (it.parts.size() == 1) {
      const Part& p = it.parts[0];
      rows.push_back({it.name, it.format, shape_text(it.shape), part_dtype(p), p.encoding,
                      human_bytes(p.stored), ratio_text(p.decoded, p.stored),
                      short_digest(p.digest)});
      continue;
    }
    uint64_t stored = 0, decoded = 0;
    bool known = true;
    std::string encoding;
    for (const Part& p : it.parts) {
      stored += p.stored;
      if (p.decoded)
        decoded += *p.decoded;
      else
        known = false;
      encoding = encoding.empty() || encoding == p.encoding ? p.encoding : "mixed";
    }
    rows.push_back({it.name, it.format, shape_text(it.shape), object_dtype(in, it), encoding,
                    human_bytes(stored),
                    ratio_text(known ? std::optional(decoded) : std::nullopt, stored), ""});
    for (const Part& p : it.parts)
      rows.push_back({"  ." + p.role, "", "", part_dtype(p), p.encoding, human_bytes(p.stored),
                      ratio_text(p.decoded, p.stored), short_digest(p.digest)});
  }
  print_table(std::move(rows));
}

Result<std::unique_ptr<Input>> open_input(const std::string& path) {
  return Input::open(path);
}

}  // namespace

int run_info(const Args& a) {
  if (a.pos.size() != 1) return usage_error("info", "expects one FILE");
  auto in = open_input(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  if (a.has("--json")) {
    AttributeMaps maps;
    const std::string text = info_json(**in, maps).dump(2, ' ', false, Json::error_handler_t::replace);
    print_with_attributes(text, maps, 2);
    std::printf("\n");
  } else
    print_info(**in);
  return kOk;
}

int run_ls(const Args& a) {
  if (a.pos.size() != 1) return usage_error("ls", "expects one FILE");
  auto in = open_input(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  if (!a.has("--long")) {
    // Names as text for people and scripts: control bytes as \xNN (a name
    // holding a newline would read as two; an escape sequence would move
    // the terminal), backslashes doubled (listed()).
    for (const Item& it : (*in)->items) std::printf("%s\n", listed(it.name).c_str());
    return kOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Item& it : (*in)->items)
    rows.push_back({it.name, it.format, shape_text(it.shape), object_dtype(**in, it)});
  print_table(std::move(rows));
  return kOk;
}

int run_dump(const Args& a) {
  if (a.pos.size() != 1) return usage_error("dump", "expects one FILE");
  auto in = open_input(a.pos[0]);
  if (!in) return report(in.error(), a.pos[0]);
  // A foreign file's manifest is the model the library reads from it
  // (zt_open_ex with allow_foreign), marked "foreign".
  const std::string& text = (*in)->reader()->manifest_json();
  if (a.has("--compact")) {
    std::printf("%s\n", text.c_str());
  } else {
    auto laid_out = write_indented_json(text, 2, stdout);
    if (!laid_out) return report(laid_out.error(), a.pos[0]);
    std::printf("\n");
  }
  return kOk;
}

// ---- id ---------------------------------------------------------------------

int run_id(const Args& a) {
  if (a.pos.empty()) return usage_error("id", "expects at least one FILE");
  const std::string algorithm = a.get("--algorithm").value_or("sha256");
  const DigestAlgo algo = digest_algo_from_name(algorithm);
  if (algo != DigestAlgo::xxh3 && algo != DigestAlgo::sha256)
    return usage_error("id", "--algorithm is sha256 or xxh3");
  int worst = kOk;
  for (const std::string& arg : a.pos) {
    const std::string path = location_for_messages(arg);  // printed; arg is opened
    auto in = open_input(arg);
    if (!in) {
      worst = std::max(worst, report(in.error(), path));
      continue;
    }
    const Reader* r = (*in)->reader();
    if ((*in)->kind != foreign::FileKind::zt) {
      worst =
          std::max(worst, report(make_error(Status::unsupported,
                                            "a content digest is a zTensor v2 model's; this "
                                            "is a %s file",
                                            std::string(foreign::kind_name((*in)->kind)).c_str()),
                                 path));
      continue;
    }
    auto id = content_digest(r->manifest(), algo);
    if (!id) {
      worst = std::max(worst, report(id.error(), path));
      continue;
    }
    std::printf("%s  %s\n", id->c_str(), path.c_str());
  }
  return worst;
}

// ---- verify -----------------------------------------------------------------

namespace {

struct VerifyCounts {
  uint64_t objects = 0, components = 0, decoded_bytes = 0;
  uint64_t digests = 0, mismatches = 0, without_digest = 0, unknown_algorithm = 0;
  std::map<std::string, uint64_t> by_algorithm;
  std::map<std::string, uint64_t> structures;  // content rules checked, by kind
  uint64_t failures = 0;
};

std::string structure_rule(const Object& o) {
  if (const ObjectFormat* f = format_of(o); f && !f->content_rules.empty())
    return std::string(f->content_rules);
  for (const Component& c : o.components)
    if (c.dtype == DType::boolean) return "bool bytes";
  return "";
}

// Checks one object through the reader's own check (every digest over the
// stored bytes, every decode, the content rules that need data: the same as
// zt_verify and the check every copy passes) and adds what it saw to `n`.
Result<void> verify_object(const Reader& r, size_t i, VerifyCounts& n, Progress& progress) {
  const Object& o = r.manifest().objects[i];
  VerifyReport rep;
  auto ok = r.verify_object(i, rep);
  n.components += rep.components;
  n.decoded_bytes += rep.decoded_bytes;
  n.digests += rep.checked;
  n.without_digest += rep.unchecked - rep.unknown_algorithm;
  n.unknown_algorithm += rep.unknown_algorithm;
  for (const DigestAlgo a : {DigestAlgo::xxh3, DigestAlgo::sha256, DigestAlgo::crc32c})
    if (const uint64_t k = rep.by_algorithm[static_cast<size_t>(a)]) n.by_algorithm[std::string(digest_algo_name(a))] += k;
  if (!ok && ok.error().status == Status::digest) n.mismatches++;
  uint64_t stored = 0;
  for (const Component& c : o.components) stored += c.length;
  progress.advance(stored);
  ZT_TRY(ok);
  const std::string rule = structure_rule(o);
  if (!rule.empty()) n.structures[rule]++;
  return {};
}

std::string counts_text(const std::map<std::string, uint64_t>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + std::to_string(v) + " " + k;
  return s;
}

int verify_zt(const std::string& path, const Reader& r, bool verbose) {
  const Manifest& m = r.manifest();
  VerifyCounts n;
  uint64_t total = 0;
  for (const Object& o : m.objects)
    for (const Component& c : o.components) total += c.length;
  uint64_t components = 0;
  for (const Object& o : m.objects) components += o.components.size();
  std::printf("verify %s (zTensor %s, %zu objects, %llu components)\n", path.c_str(),
              m.version.c_str(), m.objects.size(), static_cast<ull>(components));
  // A sharded v2 model: every shard file found, of its size, and hashed
  // whole against the root's table (v2 spec §7.3) before its objects.
  VerifyReport shards;
  Result<void> shards_ok = {};
  if (!m.shards.empty()) {
    shards_ok = r.verify_shards(shards);
    if (!shards_ok) {
      n.failures++;
      std::printf("  FAIL  %s\n", shards_ok.error().message.c_str());
    }
  }
  Progress progress("verify", total);
  for (size_t i = 0; i < m.objects.size(); ++i) {
    const Object& o = m.objects[i];
    auto ok = verify_object(r, i, n, progress);
    n.objects++;
    if (!ok) {
      n.failures++;
      // Core messages name the object already; others get its name.
      const std::string& msg = ok.error().message;
      const std::string name = printable(o.name);  // as messages show it
      if (msg.find("\"" + name + "\"") != std::string::npos)
        std::printf("  FAIL  %s\n", msg.c_str());
      else
        std::printf("  FAIL  object \"%s\": %s\n", name.c_str(), msg.c_str());
    } else if (verbose) {
      std::printf("  ok    %s (%s, %zu component%s)\n", printable(o.name).c_str(),
                  printable(o.format).c_str(), o.components.size(),
                  o.components.size() == 1 ? "" : "s");
    }
  }
  progress.finish();
  std::printf("%s: %s\n", path.c_str(), n.failures ? "FAILED" : "OK");
  std::printf(
      "  manifest    zTensor %s: container, CBOR, schema, placement, alignment, overlaps, sizes\n",
      m.version.c_str());
  if (!m.shards.empty())
    std::printf(
        "  shards      %zu in the table, %llu found with their size and whole-file digest\n",
        m.shards.size(), static_cast<ull>(shards.shards));
  std::printf("  objects     %llu checked, %llu failed\n", static_cast<ull>(n.objects),
              static_cast<ull>(n.failures - (shards_ok ? 0 : 1)));
  std::printf("  components  %llu decoded (%s)\n", static_cast<ull>(n.components),
              human_bytes(n.decoded_bytes).c_str());
  // Appended, not "(" + text: GCC 12 at -O3 misreads that insert (-Wrestrict).
  std::string algorithms;
  if (!n.by_algorithm.empty()) algorithms.append(" (").append(counts_text(n.by_algorithm)).append(")");
  std::printf("  digests     %llu match%s", static_cast<ull>(n.digests), algorithms.c_str());
  if (n.mismatches) std::printf(", %llu MISMATCH", static_cast<ull>(n.mismatches));
  std::printf(", %llu without a digest", static_cast<ull>(n.without_digest));
  if (n.unknown_algorithm)
    std::printf(", %llu of an unknown algorithm (not checked)",
                static_cast<ull>(n.unknown_algorithm));
  std::printf("\n");
  std::printf("  content     %s\n", n.structures.empty()
                                        ? "no sparse, quantized or bool data to check"
                                        : (counts_text(n.structures) + " hold").c_str());
  return n.failures ? kFailed : kOk;
}

}  // namespace

int run_verify(const Args& a) {
  if (a.pos.empty()) return usage_error("verify", "expects at least one FILE");
  const bool verbose = a.has("--verbose");
  int worst = kOk;
  for (const std::string& arg : a.pos) {
    const std::string path = location_for_messages(arg);  // printed; arg is opened
    auto in = open_input(arg);
    if (!in) {
      const Status s = in.error().status;
      const int code = report(in.error(), path);
      std::printf("%s: FAILED\n", path.c_str());
      // A file that cannot be read at all is an I/O error; one that breaks
      // the format fails verification.
      worst =
          std::max(worst, s == Status::io || s == Status::nomem ? code : static_cast<int>(kFailed));
      continue;
    }
    const Reader& r = *(*in)->reader();
    if ((*in)->kind == foreign::FileKind::zt) {
      worst = std::max(worst, verify_zt(path, r, verbose));
      continue;
    }
    // The content rules (bool bytes, sparse and quantized structure) of
    // what the foreign reader made.
    if (auto v = r.verify(); !v) {
      worst = std::max(worst, report(v.error(), path));
      std::printf("%s: FAILED\n", path.c_str());
      continue;
    }
    // Zip containers carry a CRC-32 per member, checked as the members are read.
    const foreign::FileKind k = (*in)->kind;
    const char* digests = k == foreign::FileKind::npz ? "the CRC-32 of every member checked"
                          : k == foreign::FileKind::pytorch
                              ? "a zip checkpoint's member CRC-32s checked; the legacy format has "
                                "no digests"
                              : "the format has no digests";
    std::printf(
        "%s: OK\n  structure   %s: header, offsets, sizes against shapes (%s)\n"
        "  objects     %zu\n",
        path.c_str(), std::string(foreign::kind_name(k)).c_str(), digests, (*in)->items.size());
  }
  return worst;
}

}  // namespace zt::cli
