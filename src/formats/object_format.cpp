#include "formats/object_format.h"

#include <algorithm>

namespace zt {

namespace {

// The table every lookup goes through; a new format adds one line here.
constexpr const ObjectFormat* kFormats[] = {&kDenseFormat, &kSparseCsrFormat, &kSparseCooFormat,
                                            &kQuantizedGroupFormat};

}  // namespace

std::span<const ObjectFormat* const> object_formats() {
  return kFormats;
}

const ObjectFormat* find_object_format(std::string_view name) {
  for (const ObjectFormat* f : kFormats)
    if (f->name == name) return f;
  return nullptr;
}

std::string presented_format(std::string_view layout) {
  for (const ObjectFormat* f : kFormats)
    if (std::find(f->layout_ids.begin(), f->layout_ids.end(), layout) != f->layout_ids.end())
      return std::string(f->name);
  return std::string(layout);
}

bool is_index_role(const ObjectFormat& f, std::string_view role) {
  return std::find(f.index_roles.begin(), f.index_roles.end(), role) != f.index_roles.end();
}

}  // namespace zt
