#include "input.h"

#include "base/zt_limits.h"
#include "cbor/cbor_encode.h"
#include "cbor/cbor_item.h"
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
    if (reader_->zero_copy(c) && !legacy) {
      auto m = reader_->map(item, part);
      ZT_TRY(m);
      b.view = *m;
      return b;
    }
    auto d = reader_->decode(item, part);
    ZT_TRY(d);
    b.owned = std::move(*d);
    if (legacy) normalise_bools(b.owned);
    b.view = b.owned;
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

  static Result<std::unique_ptr<Input>> open(const std::string& path) {
    auto r = Reader::open_file(path);
    ZT_TRY(r);
    auto in = std::make_unique<ZtInput>();
    in->reader_ = std::move(*r);
    const Manifest& m = in->reader_->manifest();
    in->path = path;
    in->kind = foreign::FileKind::zt;
    in->version = m.version;
    in->file_size = in->reader_->file_size();
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

class ForeignInput final : public Input {
 public:
  Result<Buffer> bytes(size_t item, size_t part) const override {
    Buffer b;
    b.view = file_.objects[item].components[part].bytes;
    return b;
  }

  static Result<std::unique_ptr<Input>> open(const std::string& path,
                                             const foreign::ReadOptions& options) {
    auto f = foreign::read_foreign(path, options);
    ZT_TRY(f);
    if (f->attributes.contains("gguf.skipped"))
      for (const Json& s : f->attributes["gguf.skipped"])
        std::fprintf(stderr, "zt: note: %s: tensor \"%s\" of unknown GGML type %u skipped\n",
                     path.c_str(), s["name"].get<std::string>().c_str(),
                     s["ggml_type"].get<unsigned>());
    auto in = std::make_unique<ForeignInput>();
    in->file_ = std::move(*f);
    in->path = path;
    in->kind = in->file_.kind;
    in->version = std::string(foreign::kind_name(in->kind));
    in->file_size = in->file_.source.size();
    // Foreign readers describe their metadata as JSON values; copies carry
    // CBOR, so it is encoded once here, from the values (not their text: a
    // GGUF float NaN stays NaN).
    in->has_attributes = !in->file_.attributes.empty();
    if (in->has_attributes) {
      auto c = json_value_to_cbor(in->file_.attributes);
      ZT_TRY(c);
      in->attributes_cbor = std::move(*c);
    }
    for (const foreign::ForeignObject& o : in->file_.objects) {
      Item it;
      it.name = o.name;
      it.format = o.format;
      it.descriptor = find_object_format(o.format);
      it.shape = o.shape;
      it.has_attributes = !o.attributes.empty();
      if (it.has_attributes) {
        auto c = json_value_to_cbor(o.attributes);
        ZT_TRY(c);
        it.attributes_cbor = std::move(*c);
      }
      for (const foreign::ForeignComponent& c : o.components) {
        Part p;
        p.role = c.role;
        p.dtype = c.dtype;
        p.type = c.type;
        p.known_type = c.type ? find_logical_type(*c.type) : nullptr;  // 1.2's types
        p.stored = c.bytes.size();
        p.decoded = c.bytes.size();
        it.parts.push_back(std::move(p));
      }
      in->items.push_back(std::move(it));
    }
    in->index_names();
    return std::unique_ptr<Input>(std::move(in));
  }

 private:
  foreign::ForeignFile file_;
};

}  // namespace

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    const bool viewing_owned = !o.owned.empty() && o.view.data() == o.owned.data();
    owned = std::move(o.owned);
    view = viewing_owned ? std::span<const uint8_t>(owned) : o.view;
    o.view = {};
  }
  return *this;
}

Result<std::unique_ptr<Windows>> Input::windows(size_t item, size_t part) const {
  auto b = bytes(item, part);
  ZT_TRY(b);
  return std::unique_ptr<Windows>(std::make_unique<BufferWindows>(std::move(*b)));
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

Result<std::unique_ptr<Input>> Input::open(const std::string& path,
                                           const foreign::ReadOptions& options) {
  const foreign::FileKind k = foreign::kind_from_path(path);
  if (k == foreign::FileKind::zt || k == foreign::FileKind::unknown) return ZtInput::open(path);
  return ForeignInput::open(path, options);
}

Result<void> for_each_attribute(std::span<const uint8_t> attributes_cbor, const AttributeVisitor& f) {
  if (attributes_cbor.empty()) return {};
  return cbor::for_each_entry(attributes_cbor, f);
}

std::string attribute_text(std::span<const uint8_t> value, size_t max_bytes) {
  std::string out;
  cbor::JsonStyle style;
  style.max_bytes = max_bytes;
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
