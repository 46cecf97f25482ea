#include "base/core_count.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <thread>
#include <vector>

namespace zt::cpus {

// In zt::cpus, not zt: a unity batch shares anonymous namespaces.
namespace {

// mountinfo lists every mount of the process; a machine with thousands of
// them still stays far below this, and nothing here needs more.
constexpr size_t kMostFileBytes = size_t{8} << 20;

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char chunk[4096];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMostFileBytes) return std::nullopt;
  }
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(separator, start)) != std::string_view::npos; start = at + 1)
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}

bool has_item(std::string_view list, std::string_view item) {
  const auto items = split(list, ',');
  return std::find(items.begin(), items.end(), item) != items.end();
}

std::optional<int64_t> parse_int(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// mountinfo writes a space, tab, newline or backslash in a path as \ and
// three octal digits.
std::string unescape_octal(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() &&
        field.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

enum class Hierarchy { v1, v2 };

// The process's cgroup path in the hierarchy that holds the cpu
// controller (v1: a line whose controller list names "cpu"; v2: the
// "0::" line).
std::optional<std::string> cgroup_path(std::string_view self_cgroup, Hierarchy version) {
  for (const auto line : split(self_cgroup, '\n')) {
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const auto id = line.substr(0, first);
    const auto controllers = line.substr(first + 1, second - first - 1);
    const auto path = line.substr(second + 1);
    if (version == Hierarchy::v2 ? id == "0" && controllers.empty() : has_item(controllers, "cpu"))
      return std::string(path);
  }
  return std::nullopt;
}

struct Mount {
  std::string root;   // the hierarchy's path that is mounted
  std::string point;  // where
};

// Fields: id, parent, major:minor, root, mount point, options, optional
// fields, "-", file system type, source, super options.
std::optional<Mount> cgroup_mount(std::string_view mountinfo, Hierarchy version) {
  for (const auto line : split(mountinfo, '\n')) {
    const auto fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const auto type = dash[1];
    const bool wanted =
        version == Hierarchy::v2 ? type == "cgroup2" : type == "cgroup" && has_item(dash[3], "cpu");
    if (wanted) return Mount{unescape_octal(fields[3]), unescape_octal(fields[4])};
  }
  return std::nullopt;
}

// quota / period in CPUs, where both are whole numbers above 0 (v1 says
// "no quota" with -1, v2 with "max": neither is).
std::optional<double> cpus_of(std::optional<int64_t> quota, std::optional<int64_t> period) {
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

// The smaller of two quotas, either of which may be absent.
std::optional<double> smaller(std::optional<double> a, std::optional<double> b) {
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

// CPUs' worth of one cgroup directory's quota, if it sets one.
std::optional<double> quota_in(const std::string& dir, Hierarchy version) {
  if (version == Hierarchy::v2) {
    const auto text = read_small_file(dir + "/cpu.max");  // "QUOTA PERIOD"
    if (!text) return std::nullopt;
    const auto parts = split(split(*text, '\n')[0], ' ');
    if (parts.size() != 2) return std::nullopt;
    return cpus_of(parse_int(parts[0]), parse_int(parts[1]));
  }
  const auto quota = read_small_file(dir + "/cpu.cfs_quota_us");
  const auto period = read_small_file(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  return cpus_of(parse_int(*quota), parse_int(*period));
}

// The smallest quota from the process's cgroup up to the mount. The path
// is taken relative to the mount's root; where it lies outside it (another
// cgroup namespace, "..") only the mount's own directory is read.
std::optional<double> quota_of(const CgroupFiles& files, std::string_view self_cgroup,
                               std::string_view mountinfo, Hierarchy version) {
  const auto path = cgroup_path(self_cgroup, version);
  const auto mount = cgroup_mount(mountinfo, version);
  if (!path || !mount) return std::nullopt;
  std::string_view relative = *path;
  const std::string_view root =
      mount->root == "/" ? std::string_view() : std::string_view(mount->root);
  if (relative.substr(0, root.size()) == root &&
      (relative.size() == root.size() || relative[root.size()] == '/'))
    relative.remove_prefix(root.size());
  else
    relative = {};
  std::vector<std::string_view> names;
  for (const auto name : split(relative, '/')) {
    if (name == "..") {
      names.clear();
      break;
    }
    if (!name.empty() && name != ".") names.push_back(name);
  }
  std::string dir = files.root + mount->point;
  std::optional<double> smallest = quota_in(dir, version);
  for (const auto name : names) {
    dir += '/';
    dir += name;
    smallest = smaller(smallest, quota_in(dir, version));
  }
  return smallest;
}

}  // namespace

unsigned in_affinity() {
  // cpu_set_t holds 1024 CPUs; larger machines need a larger mask, which
  // sched_getaffinity asks for by failing with EINVAL.
  for (size_t sets = 1; sets <= 64; sets *= 2) {
    std::vector<cpu_set_t> mask(sets);
    const size_t bytes = sets * sizeof(cpu_set_t);
    if (::sched_getaffinity(0, bytes, mask.data()) == 0) {
      const int n = CPU_COUNT_S(bytes, mask.data());
      if (n > 0) return static_cast<unsigned>(n);
      break;
    }
    if (errno != EINVAL) break;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::optional<double> cgroup_quota(const CgroupFiles& files) {
  const auto self_cgroup = read_small_file(files.self_cgroup);
  const auto mountinfo = read_small_file(files.mountinfo);
  if (!self_cgroup || !mountinfo) return std::nullopt;
  // On a hybrid system the cpu controller is in one of the two hierarchies;
  // where both carry a quota, the smaller one binds.
  return smaller(quota_of(files, *self_cgroup, *mountinfo, Hierarchy::v2),
                 quota_of(files, *self_cgroup, *mountinfo, Hierarchy::v1));
}

std::optional<unsigned> from_environment(const char* value) {
  if (!value) return std::nullopt;
  const auto n = parse_int(value);
  if (!n || *n < 1 || *n > kMostThreads) return std::nullopt;
  return static_cast<unsigned>(*n);
}

unsigned bounded(unsigned affinity, std::optional<double> quota) {
  unsigned n = std::max(1u, affinity);
  if (quota && *quota > 0) {
    const double cpus = std::ceil(*quota - 1e-9);
    if (cpus < n) n = std::max(1u, static_cast<unsigned>(cpus));
  }
  return n;
}

}  // namespace zt::cpus

namespace zt {

unsigned core_count() {
  static const unsigned n = [] {
    if (const auto asked = cpus::from_environment(std::getenv("ZT_THREADS"))) return *asked;
    return cpus::bounded(cpus::in_affinity(), cpus::cgroup_quota());
  }();
  return n;
}

namespace {
thread_local unsigned t_budget = 0;  // 0: none set
}  // namespace

unsigned threads_for_all_cores() {
  return t_budget ? t_budget : core_count();
}

ThreadBudget::ThreadBudget(unsigned n) : before_(t_budget) {
  t_budget = n == 0 ? 0 : std::min(n, core_count());
}

ThreadBudget::~ThreadBudget() {
  t_budget = before_;
}

}  // namespace zt
