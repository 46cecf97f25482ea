// A C++ program built with find_package(ztensor) and ztensor::ztensor. It
// opens a conformance file and prints every object with its shape and the
// sum of its decoded bytes (a cheap check that data really arrive).
#include <ztensor.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE.zt\n", argv[0]);
    return 2;
  }
#ifdef ZT_PACKAGE_VERSION
  // Built through find_package: the package, the header and the library say
  // one version. (Built against an older header, only the major is shared.)
  const std::string header = std::to_string(ZT_VERSION_MAJOR) + "." + std::to_string(ZT_VERSION_MINOR) + "." +
                             std::to_string(ZT_VERSION_PATCH);
  if (header != zt_version() || header != ZT_PACKAGE_VERSION) {
    std::fprintf(stderr, "versions differ: header %s, library %s, CMake package %s\n", header.c_str(), zt_version(),
                 ZT_PACKAGE_VERSION);
    return 1;
  }
#endif
  zt_reader* raw = nullptr;
  if (const zt_status s = zt_open(argv[1], &raw); s != ZT_OK) {
    std::fprintf(stderr, "zt_open: %s: %s\n", zt_status_name(s), zt_last_error());
    return 1;
  }
  const std::unique_ptr<zt_reader, decltype(&zt_close)> r(raw, &zt_close);
  const size_t n = zt_object_count(r.get());
  if (n == 0) {
    std::fprintf(stderr, "no objects in %s\n", argv[1]);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) {
    size_t ndim = 0;
    const uint64_t* shape = zt_object_shape(r.get(), i, &ndim);
    std::printf("%s %s [", zt_object_name(r.get(), i), zt_object_format(r.get(), i));
    for (size_t d = 0; d < ndim; ++d)
      std::printf("%s%llu", d ? ", " : "", static_cast<unsigned long long>(shape[d]));
    std::printf("]");
    for (size_t k = 0; k < zt_component_count(r.get(), i); ++k) {
      const char* role = zt_component_role(r.get(), i, k);
      const void* data = nullptr;
      uint64_t nbytes = 0;
      if (const zt_status s = zt_component_map(r.get(), i, role, &data, &nbytes); s != ZT_OK) {
        std::fprintf(stderr, "\nzt_component_map: %s: %s\n", zt_status_name(s), zt_last_error());
        return 1;
      }
      unsigned long long sum = 0;
      for (uint64_t b = 0; b < nbytes; ++b) sum += static_cast<const unsigned char*>(data)[b];
      std::printf(" %s:%s:%llu bytes (byte sum %llu)", role, zt_component_dtype(r.get(), i, role),
                  static_cast<unsigned long long>(nbytes), sum);
    }
    std::printf("\n");
  }
  uint64_t checked = 0, unchecked = 0;
  if (const zt_status s = zt_verify(r.get(), &checked, &unchecked); s != ZT_OK) {
    std::fprintf(stderr, "zt_verify: %s: %s\n", zt_status_name(s), zt_last_error());
    return 1;
  }
  std::printf(
      "consumer (CMake, libztensor %s): %zu objects, verify ok (%llu checked, %llu unchecked)\n",
      zt_version(), n, static_cast<unsigned long long>(checked),
      static_cast<unsigned long long>(unchecked));
  return 0;
}
