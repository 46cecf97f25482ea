// A C++20 program built against the INSTALLED package with the flags of
// `pkg-config --cflags --libs zt`, using ztensor.hpp: proves the wrapper is
// installed and works from there. Writes a file, reopens it, checks it.
#include <cstdio>
#include <exception>
#include <vector>
#include <ztensor.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.zt\n", argv[0]);
    return 2;
  }
  try {
    const std::vector<float> w{1, 2, 3, 4, 5, 6};
    {
      ztensor::Writer out(argv[1]);
      out.add_dense("w", w, {2, 3}, "zstd");
      out.finish();
    }
    const ztensor::Reader in(argv[1]);
    const std::span<const float> got = in["w"].data().as<float>();
    const bool ok = in.size() == 1 && in["w"].shape().size() == 2 && in["w"].shape()[1] == 3 &&
                    std::vector<float>(got.begin(), got.end()) == w &&
                    in["w"].read_f64() == std::vector<double>(w.begin(), w.end()) &&
                    in.verify().checked == 1;
    std::printf("ztensor %s: %s\n", std::string(ztensor::version()).c_str(),
                ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
  } catch (const ztensor::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
