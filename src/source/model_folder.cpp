#include "source/model_folder.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/path_parts.h"

namespace zt {

namespace {

// realpath(3), or an empty string when it fails (errno says why).
std::string real(const std::string& path) {
  std::unique_ptr<char, decltype(&::free)> p(::realpath(path.c_str(), nullptr), &::free);
  return p ? std::string(p.get()) : std::string();
}

bool inside(const std::string& file, const std::string& folder) {
  if (folder.empty() || file.size() <= folder.size()) return false;
  if (folder == "/") return file.front() == '/';
  return file.compare(0, folder.size(), folder) == 0 && file[folder.size()] == '/';
}

}  // namespace

Result<std::string> resolve_beside_model(const std::string& model_path, const std::string& relative,
                                         const char* what) {
  const std::string given = directory_of(model_path) + "/" + relative;
  const std::string target = real(given);
  ZT_FAIL_IF(target.empty(), io, "%s: cannot open (%s \"%s\"): %s", given.c_str(), what,
             relative.c_str(), std::strerror(errno));
  // The model's folder as given, and the folder of the file it links to.
  const std::string folder = real(directory_of(model_path));
  const std::string model_real = real(model_path);
  const std::string linked_folder = model_real.empty() ? std::string() : directory_of(model_real);
  ZT_FAIL_IF(!inside(target, folder) && !inside(target, linked_folder), invalid,
             "%s \"%s\" resolves to %s, outside the model's folder %s (symbolic links are "
             "followed; nothing outside the model's folder is read)",
             what, relative.c_str(), target.c_str(), folder.c_str());
  return target;
}

}  // namespace zt
