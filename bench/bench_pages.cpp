// Proof that zt_open reads the manifest and no data page.
//
// The file holds 10,000 objects of 128 KiB each (1.25 GiB of data) whose data
// region is a sparse hole: only the header, the manifest and the footer are
// written. After dropping the file from the page cache, zt_open + a full
// enumeration runs, then:
//  - /proc/self/pagemap tells, page by page, which pages of the reader's own
//    mapping are mapped: the pages the reader touched, plus the neighbours
//    the kernel maps with them (fault-around, 64 KiB);
//  - mincore() on a fresh mapping counts the file's pages in the page cache:
//    that includes the kernel's readahead around every page read (the
//    device's read_ahead_kb, 8 MiB on the machine measured);
//  - getrusage gives the page faults taken by the open.
// Pages within those kernel windows of the header or of the manifest are
// reported apart ("near"); the claim is that no other data page is touched.
// A control then maps and reads one component in the middle of the file and
// counts again, to show that the probe does see data pages when they are read.
// Prints one JSON object; exits 1 if the claim or the control fails.
#include <sys/resource.h>
#include <sys/sysmacros.h>

#include <fstream>

#include "bench_util.h"
#include "cbor/cbor_encode.h"

namespace {

constexpr size_t kObjects = 10000;
constexpr uint64_t kBlob = uint64_t{128} << 10;
constexpr uint64_t kDataStart = 64;
constexpr uint64_t kFaultAround = uint64_t{64} << 10;

std::vector<uint8_t> manifest() {
  zt::CborWriter w;
  w.map(2);
  w.text("version");
  w.text("1.2.0");
  w.text("objects");
  w.map(kObjects);
  for (size_t i = 0; i < kObjects; ++i) {
    w.text(ztb::object_name(i));
    w.map(3);
    w.text("shape");
    w.array(1);
    w.uint(kBlob / 4);
    w.text("format");
    w.text("dense");
    w.text("components");
    w.map(1);
    w.text("data");
    w.map(4);
    w.text("dtype");
    w.text("f32");
    w.text("offset");
    w.uint(kDataStart + i * kBlob);
    w.text("length");
    w.uint(kBlob);
    w.text("digest");
    w.text("xxh3:0123456789abcdef");
  }
  return w.take();
}

void pwrite_all(int fd, const void* p, size_t n, uint64_t off) {
  if (::pwrite(fd, p, n, static_cast<off_t>(off)) != static_cast<ssize_t>(n))
    ztb::die("pwrite failed");
}

// Header, a hole for the data, manifest, size, footer.
uint64_t write_sparse(const std::string& path, const std::vector<uint8_t>& m) {
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) ztb::die("cannot create " + path);
  const uint64_t manifest_start = kDataStart + kObjects * kBlob;
  pwrite_all(fd, "ZTEN1000", 8, 0);
  if (::ftruncate(fd, static_cast<off_t>(manifest_start)) != 0) ztb::die("ftruncate failed");
  pwrite_all(fd, m.data(), m.size(), manifest_start);
  uint8_t tail[16];
  uint64_t size = m.size();
  for (int i = 0; i < 8; ++i) tail[i] = static_cast<uint8_t>(size >> (8 * i));
  std::memcpy(tail + 8, "ZTEN1000", 8);
  pwrite_all(fd, tail, 16, manifest_start + m.size());
  ::fsync(fd);
  ::close(fd);
  return manifest_start;
}

struct Residency {
  uint64_t file_pages = 0, resident = 0, data_resident = 0, data_resident_far = 0;
};

// Pages of the data region outside `window` bytes of the header and the manifest.
bool far_from_edges(uint64_t begin, uint64_t end, uint64_t manifest_start, uint64_t window) {
  return begin >= kDataStart + window && end + window <= manifest_start;
}

bool in_data(uint64_t begin, uint64_t end, uint64_t manifest_start) {
  return end > kDataStart && begin < manifest_start;
}

// The readahead of the device holding `path`, in bytes.
uint64_t readahead_bytes(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  const std::string dev =
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  for (const char* q : {"/queue/read_ahead_kb", "/../queue/read_ahead_kb"}) {
    std::ifstream f(dev + q);
    uint64_t kb = 0;
    if (f >> kb) return kb << 10;
  }
  return uint64_t{128} << 10;  // the kernel's default
}

Residency residency(const std::string& path, uint64_t manifest_start, uint64_t window) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t size = ztb::file_size(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) ztb::die("mmap failed");
  Residency r;
  r.file_pages = (size + page - 1) / page;
  std::vector<unsigned char> vec(r.file_pages);
  if (::mincore(p, size, vec.data()) != 0) ztb::die("mincore failed");
  for (uint64_t i = 0; i < r.file_pages; ++i) {
    if (!(vec[i] & 1)) continue;
    ++r.resident;
    const uint64_t begin = i * page, end = begin + page;
    if (!in_data(begin, end, manifest_start)) continue;
    ++r.data_resident;
    if (far_from_edges(begin, end, manifest_start, window)) ++r.data_resident_far;
  }
  ::munmap(p, size);
  ::close(fd);
  return r;
}

struct Mapped {
  uint64_t pages = 0, data = 0, data_far = 0;
};

// Pages of this process's mappings of `path` that are mapped (present in the
// page tables), from /proc/self/maps and /proc/self/pagemap.
Mapped mapped_pages(const std::string& path, uint64_t manifest_start) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::ifstream maps("/proc/self/maps");
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) ztb::die("cannot open /proc/self/pagemap");
  Mapped m;
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < path.size() ||
        line.compare(line.size() - path.size(), path.size(), path) != 0)
      continue;
    unsigned long long lo = 0, hi = 0, off = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %*s %llx", &lo, &hi, &off) != 3) continue;
    std::vector<uint64_t> entries((hi - lo) / page);
    const ssize_t want = static_cast<ssize_t>(entries.size() * 8);
    if (::pread(pagemap, entries.data(), static_cast<size_t>(want),
                static_cast<off_t>(lo / page * 8)) != want)
      ztb::die("short read of /proc/self/pagemap");
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!(entries[i] >> 63)) continue;  // bit 63: page present
      ++m.pages;
      const uint64_t begin = off + i * page, end = begin + page;
      if (!in_data(begin, end, manifest_start)) continue;
      ++m.data;
      if (far_from_edges(begin, end, manifest_start, kFaultAround)) ++m.data_far;
    }
  }
  ::close(pagemap);
  return m;
}

uint64_t enumerate(const zt_reader* r) {
  uint64_t acc = 0;
  for (size_t i = 0, n = zt_object_count(r); i < n; ++i) {
    acc += static_cast<uint8_t>(zt_object_name(r, i)[0]);
    size_t ndim = 0;
    const uint64_t* shape = zt_object_shape(r, i, &ndim);
    for (size_t d = 0; d < ndim; ++d) acc += shape[d];
    for (size_t k = 0, nc = zt_component_count(r, i); k < nc; ++k) {
      const char* role = zt_component_role(r, i, k);
      uint64_t stored = 0, decoded = 0;
      ztb::check(zt_component_stored_size(r, i, role, &stored), "zt_component_stored_size");
      ztb::check(zt_component_decoded_size(r, i, role, &decoded), "zt_component_decoded_size");
      acc += stored + decoded + static_cast<uint8_t>(zt_component_dtype(r, i, role)[0]);
    }
  }
  return acc;
}

}  // namespace

int main() {
  ztb::FileGuard file(ztb::bench_path("sparse-10k.zt"));
  const std::vector<uint8_t> m = manifest();
  const uint64_t manifest_start = write_sparse(file.path, m);
  const uint64_t readahead = readahead_bytes(file.path);
  struct stat st {};
  ::stat(file.path.c_str(), &st);
  ztb::drop_cache(file.path);
  const Residency before = residency(file.path, manifest_start, readahead);

  rusage ru0{}, ru1{};
  ::getrusage(RUSAGE_SELF, &ru0);
  zt_reader* r = nullptr;
  ztb::check(zt_open(file.path.c_str(), &r), "zt_open");
  const uint64_t acc = enumerate(r);
  ::getrusage(RUSAGE_SELF, &ru1);
  const Mapped mapped = mapped_pages(file.path, manifest_start);
  const Residency after = residency(file.path, manifest_start, readahead);

  // Control: read one component in the middle; the probe must see it.
  const void* data = nullptr;
  uint64_t n = 0;
  ztb::check(zt_component_map(r, kObjects / 2, "data", &data, &n), "zt_component_map");
  const uint64_t sum = ztb::touch_all(static_cast<const uint8_t*>(data), n);
  const Mapped control = mapped_pages(file.path, manifest_start);
  zt_close(r);

  using ull = unsigned long long;
  std::printf(
      "{\"objects\": %zu, \"file_bytes\": %llu, \"allocated_bytes\": %llu, \"manifest_bytes\": "
      "%zu,\n"
      " \"data_pages\": %llu, \"readahead_bytes\": %llu, \"resident_before_open\": %llu,\n"
      " \"reader_mapping\": {\"mapped_pages\": %llu, \"data_pages_mapped\": %llu, "
      "\"data_pages_mapped_far\": %llu},\n"
      " \"page_cache\": {\"resident\": %llu, \"data_resident\": %llu, \"data_resident_far\": "
      "%llu},\n"
      " \"faults\": {\"minor\": %ld, \"major\": %ld},\n"
      " \"control_after_reading_one_component\": {\"data_pages_mapped\": %llu, "
      "\"data_pages_mapped_far\": %llu},\n"
      " \"checksum\": %llu}\n",
      kObjects, static_cast<ull>(ztb::file_size(file.path)),
      static_cast<ull>(st.st_blocks) * 512ull, m.size(),
      static_cast<ull>((manifest_start - kDataStart) / 4096), static_cast<ull>(readahead),
      static_cast<ull>(before.resident), static_cast<ull>(mapped.pages),
      static_cast<ull>(mapped.data), static_cast<ull>(mapped.data_far),
      static_cast<ull>(after.resident), static_cast<ull>(after.data_resident),
      static_cast<ull>(after.data_resident_far), ru1.ru_minflt - ru0.ru_minflt,
      ru1.ru_majflt - ru0.ru_majflt, static_cast<ull>(control.data),
      static_cast<ull>(control.data_far), static_cast<ull>(acc + sum));
  const bool claim = mapped.data_far == 0 && after.data_resident_far == 0;
  const bool control_seen = control.data_far >= n / 4096;
  return claim && control_seen ? 0 : 1;
}
