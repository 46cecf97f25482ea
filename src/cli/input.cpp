#include "input.h"

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
#include "foreign/foreign_reader.h"
#include "read/validate.h"

namespace zt::cli {

namespace {

// 0.1.0 and 1.0.x files read a bool byte other than 0 as true; 1.1 and
// later, which every copy writes, allow only 0 and 1. Copies carry the
// value, true, as 1.
bool legacy_bool(const Reader& r, const Component& c) {
  return c.dtype == DType::boolean && lenient_bools(r.manifest().generation);
}

void normalise_bools(std::span<uint8_t> bytes) {
  for (uint8_t& b : bytes) b = b != 0;
}

class ReaderWindows final : public Windows {
 public:
  ReaderWindows(std::unique_ptr<DecodedWindows> w, bool legacy_bool)
      : w_(std::move(w)), legacy_bool_(legacy_bool) {}
  Result<std::span<const uint8_t>> next() override {
    auto w = w_->next();
    if (!w || !legacy_bool_) return w;
    normalised_.assign(w->begin(), w->end());
    normalise_bools(normalised_);
    return std::span<const uint8_t>(normalised_);
  }

 private:
  std::unique_ptr<DecodedWindows> w_;
  bool legacy_bool_;
  std::vector<uint8_t> normalised_;
};

// A component's bytes as one window.
class BufferWindows final : public Windows {
 public:
  explicit BufferWindows(Buffer b) { b_ = std::move(b); }
  Result<std::span<const uint8_t>> next() override {
    if (done_) return std::span<const uint8_t>();
    done_ = true;
    return b_.view;
  }

 private:
  Buffer b_;
  bool done_ = false;
};

class ZtInput final : public Input {
 public:
  Result<void> check(size_t item) const override {
    VerifyReport unused;
    return reader_->verify_object(item, unused);
  }

  Result<Buffer> bytes(size_t item, size_t part) const override {
    const Component& c = reader_->manifest().objects[item].components[part];
    Buffer b;
    const bool legacy = legacy_bool(*reader_, c);
    const auto in_place = reader_->mapped_in_place(c);
    ZT_TRY(in_place);
    if (*in_place && !legacy) {
      auto m = reader_->map(item, part);
      ZT_TRY(m);
      b.view = *m;
      return b;
    }
    auto d = reader_->decode(item, part);
    ZT_TRY(d);
    b.owned = std::move(*d);
    if (legacy) normalise_bools(std::span<uint8_t>(b.owned.data(), b.owned.size()));
    b.view = b.owned.bytes();
    return b;
  }
  const Reader* reader() const override { return reader_.get(); }

  Result<std::unique_ptr<Windows>> windows(size_t item, size_t part) const override {
    auto w = reader_->windows(item, part);
    ZT_TRY(w);
    const Component& c = reader_->manifest().objects[item].components[part];
    return std::unique_ptr<Windows>(
        std::make_unique<ReaderWindows>(std::move(*w), legacy_bool(*reader_, c)));
  }

  // A .zt file's Reader, or a foreign file's (foreign::open_foreign): the
  // same Input either way.
  static Result<std::unique_ptr<Input>> adopt(std::unique_ptr<Reader> r, const std::string& path,
                                              foreign::FileKind kind) {
    auto in = std::make_unique<ZtInput>();
    in->reader_ = std::move(r);
    const Manifest& m = in->reader_->manifest();
    in->path = location_for_messages(path);  // what messages call it
    in->kind = kind;
    in->version = kind == foreign::FileKind::zt ? m.version : std::string(foreign::kind_name(kind));
    in->file_size = in->reader_->file_size();
    in->model_files = in->reader_->model_files();
    in->model_size = in->reader_->model_bytes();
    in->has_attributes = m.attributes.present;
    if (m.attributes.present) {
      auto a = encode_attributes(m.attributes);
      ZT_TRY(a);
      in->attributes_cbor = std::move(*a);
    }
    for (const Object& o : m.objects) {
      Item it;
      it.name = o.name;
      it.format = o.format;
      it.descriptor = format_of(o);
      it.shape = o.shape;
      it.input_shard = o.input_file;
      if (!o.components.empty() && o.components.front().shard)
        it.input_shard = *o.components.front().shard + 1;
      it.has_attributes = o.attributes.present;
      if (o.attributes.present) {
        auto a = encode_attributes(o.attributes);
        ZT_TRY(a);
        it.attributes_cbor = std::move(*a);
      }
      for (const Component& c : o.components) {
        Part p;
        p.role = c.role;
        p.dtype = c.dtype;
        p.type = c.type;
        p.known_type = c.known_type;
        p.encoding = c.encoding_text.value_or("raw");
        p.stored = c.length;
        p.decoded = decoded_size(c);
        p.digest = c.digest;
        it.parts.push_back(std::move(p));
      }
      in->items.push_back(std::move(it));
    }
    in->index_names();
    return std::unique_ptr<Input>(std::move(in));
  }

 private:
  std::unique_ptr<Reader> reader_;
};

// What a foreign reader left out on request (GGUF tensors of unknown
// types), said on stderr: the file attribute "gguf.skipped".
void note_skipped(const std::string& path, const Manifest& m) {
  if (!m.attributes.present) return;
  // That one entry, found in the encoded map: the rest (a tokenizer's
  // hundreds of thousands of values) is not made into JSON for it.
  const auto entry = cbor::find_entry(m.attributes.encoded, "gguf.skipped");
  if (!entry || !*entry) return;
  std::string text;
  if (!cbor::append_json(**entry, text)) return;
  const Json skipped = Json::parse(text, nullptr, false);
  if (!skipped.is_array()) return;
  for (const Json& s : skipped)
    std::fprintf(stderr, "zt: note: %s: tensor \"%s\" of unknown GGML type %u skipped\n",
                 location_for_messages(path).c_str(),
                 printable(s.value("name", std::string())).c_str(), s.value("ggml_type", 0u));
}

}  // namespace

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    const bool viewing_owned = !o.owned.empty() && o.view.data() == o.owned.data();
    owned = std::move(o.owned);
    view = viewing_owned ? owned.bytes() : o.view;
    o.view = {};
  }
  return *this;
}

Result<std::unique_ptr<Windows>> Input::windows(size_t item, size_t part) const {
  auto b = bytes(item, part);
  ZT_TRY(b);
  return std::unique_ptr<Windows>(std::make_unique<BufferWindows>(std::move(*b)));
}

Result<std::span<const uint8_t>> Blocks::take(size_t size) {
  if (rest_.size() >= size) return cut(size);
  carry_.assign(rest_.begin(), rest_.end());
  rest_ = {};
  while (carry_.size() < size) {
    auto next = w_->next();
    ZT_TRY(next);
    if (next->empty()) break;
    const size_t want = size - carry_.size();
    if (carry_.empty() && next->size() >= want) {  // no copy needed
      rest_ = *next;
      return cut(size);
    }
    const size_t n = std::min(want, next->size());
    carry_.insert(carry_.end(), next->begin(), next->begin() + static_cast<std::ptrdiff_t>(n));
    rest_ = next->subspan(n);
  }
  return std::span<const uint8_t>(carry_);
}

std::span<const uint8_t> Blocks::cut(size_t size) {
  const auto b = rest_.first(size);
  rest_ = rest_.subspan(size);
  return b;
}

const Part* Item::find(std::string_view role) const {
  for (const Part& p : parts)
    if (p.role == role) return &p;
  return nullptr;
}

std::optional<size_t> Item::index_of(std::string_view role) const {
  for (size_t k = 0; k < parts.size(); ++k)
    if (parts[k].role == role) return k;
  return std::nullopt;
}

Result<std::unique_ptr<Input>> Input::open(const std::string& named,
                                           const foreign::ReadOptions& options) {
  // A model folder or its config.json: the file that holds its tensors.
  auto entry = is_http_url(named) ? std::optional<std::string>() : foreign::model_entry(named);
  ZT_TRY(entry);
  const std::string& path = entry->value_or(named);
  const foreign::FileKind k = foreign::kind_from_path(path);
  if (is_http_url(path)) {
    // .zt files, and the foreign formats that can be read in ranges.
    const std::string shown = url_for_messages(path);
    const foreign::FileKind remote_kind = foreign::kind_from_path(shown);
    if (foreign::foreign_format(remote_kind)) {
      auto r = foreign::open_foreign_url(path, OpenOptions{});
      ZT_TRY(r);
      return ZtInput::adopt(std::move(*r), shown, remote_kind);
    }
    auto r = Reader::open_url(path);
    ZT_TRY(r);
    return ZtInput::adopt(std::move(*r), shown, foreign::FileKind::zt);
  }
  if (!foreign::foreign_format(k)) {
    auto r = Reader::open_file(path);
    ZT_TRY(r);
    return ZtInput::adopt(std::move(*r), path, foreign::FileKind::zt);
  }
  auto r = foreign::open_foreign(path, OpenOptions{}, options);
  ZT_TRY(r);
  note_skipped(path, (*r)->manifest());
  return ZtInput::adopt(std::move(*r), path, k);
}

Result<void> for_each_attribute(std::span<const uint8_t> attributes_cbor, const AttributeVisitor& f) {
  if (attributes_cbor.empty()) return {};
  return cbor::for_each_entry(attributes_cbor, f);
}

std::string attribute_text(std::span<const uint8_t> value, size_t max_bytes) {
  std::string out;
  cbor::JsonStyle style;
  style.max_bytes = max_bytes;
  style.diagnostic_specials = true;  // NaN is not null
  const auto r = cbor::append_json(value, out, style);
  if (!r && r.error().status != Status::limit) return "?";
  return out;
}

std::optional<size_t> Input::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

void Input::index_names() {
  by_name_.clear();
  for (size_t i = 0; i < items.size(); ++i) by_name_.emplace(items[i].name, i);
}

unsigned part_ratio(const Part& p) {
  return p.known_type ? p.known_type->ratio : 1;
}

}  // namespace zt::cli
