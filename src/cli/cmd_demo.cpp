// zt demo-checkpoint OUT.zt: a small, deterministic checkpoint holding one
// of everything (used by scripts/demo.sh and the CLI tests):
//   embed.weight   dense f32 [256, 64], zstd, object attributes
//   norm.weight    dense bf16 [64]
//   proj.fp8       dense u8 typed f8_e4m3fn [32, 64], with a scale attribute
//   adjacency      sparse_csr f32 [16, 16] (values, indices, indptr), zstd
//   mlp.q_proj     quantized_group 4-bit, group 32, "8_per_i32" [64, 128]
//                  (layout in src/formats/quantized_group_layout.h), packed_weight zstd
//   position_ids   dense i64 [32], zstd
// and file attributes.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "views/fp_convert.h"
#include "write/writer.h"

namespace zt::cli {

namespace {

template <typename T>
std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

uint16_t f32_to_bf16(float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  return static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);  // round to nearest even
}

Result<void> write_demo(const std::string& path) {
  WriterOptions opt;
  opt.threads = 1;  // deterministic and light
  auto wr = Writer::open(path, opt);
  ZT_TRY(wr);
  Writer& w = **wr;
  ZT_TRY(w.set_file_attributes_json(
      R"({"description": "zt demo checkpoint: one object of every kind", "framework": "zt demo-checkpoint",)"
      R"( "license": "CC0-1.0", "step": 1000, "learning_rate": 0.0003, "tags": ["demo", "fp8", "sparse", "int4"]})"));

  // Embedding: a smooth wave plus hashed noise, on a grid of 1/64, so
  // zstd finds some, not all, repeats.
  {
    const std::vector<uint64_t> shape = {256, 64};
    std::vector<float> v(256 * 64);
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t h = static_cast<uint32_t>(i);  // an integer hash (lowbias32)
      h ^= h >> 16, h *= 0x7feb352du, h ^= h >> 15, h *= 0x846ca68bu, h ^= h >> 16;
      const double noise = static_cast<double>(h >> 24) / 256.0 - 0.5;
      v[i] = static_cast<float>(
          std::round(std::sin(static_cast<double>(i) * 0.05) * 8.0 + noise * 6.0) / 64.0 +
          0.0);  // + 0.0: no -0
    }
    ZT_TRY(w.begin_object("embed.weight", "dense", shape));
    ZT_TRY(w.set_object_attributes_json(R"({"role": "token embedding", "init": "sinusoidal"})"));
    ZT_TRY(w.add_component("data", "f32", std::nullopt, as_bytes(v), "zstd"));
    ZT_TRY(w.end_object());
  }
  {
    const std::vector<uint64_t> shape = {64};
    std::vector<uint16_t> v(64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = f32_to_bf16(1.0f + static_cast<float>(i) / 256.0f);
    ZT_TRY(w.add_dense("norm.weight", "bf16", shape, as_bytes(v), "raw"));
  }
  {
    const std::vector<uint64_t> shape = {32, 64};
    std::vector<uint8_t> v(32 * 64);
    // E4M3 codes with exponent fields 4..7: magnitudes 0.125 to 1.875, as a
    // scaled weight would have; the sign and mantissa vary.
    for (size_t i = 0; i < v.size(); ++i) {
      const uint32_t h = static_cast<uint32_t>(i * 2654435761u >> 16);
      v[i] = static_cast<uint8_t>(((h >> 5) & 1u) << 7 | (4u + h % 4u) << 3 | ((h >> 2) & 7u));
    }
    ZT_TRY(w.begin_object("proj.fp8", "dense", shape));
    ZT_TRY(w.set_object_attributes_json(R"({"scale": 0.0125, "quantization": "per-tensor fp8"})"));
    ZT_TRY(w.add_component("data", "u8", "f8_e4m3fn", v, "raw"));
    ZT_TRY(w.end_object());
  }
  {
    // A banded 16 x 16 matrix: row i holds columns i-1, i, i+1.
    const uint64_t n = 16;
    std::vector<float> values;
    std::vector<uint64_t> indices, indptr = {0};
    for (uint64_t r = 0; r < n; ++r) {
      for (uint64_t c = r == 0 ? 0 : r - 1; c <= std::min(n - 1, r + 1); ++c) {
        values.push_back(c == r ? 2.0f : -1.0f);
        indices.push_back(c);
      }
      indptr.push_back(indices.size());
    }
    const std::vector<uint64_t> shape = {n, n};
    ZT_TRY(w.begin_object("adjacency", "sparse_csr", shape));
    ZT_TRY(w.add_component("values", "f32", std::nullopt, as_bytes(values), "zstd"));
    ZT_TRY(w.add_component("indices", "u64", std::nullopt, as_bytes(indices), "zstd"));
    ZT_TRY(w.add_component("indptr", "u64", std::nullopt, as_bytes(indptr), "raw"));
    ZT_TRY(w.end_object());
  }
  {
    // 4-bit GPTQ-style weight, N = 64 outputs, K = 128 inputs, groups of 32.
    const uint32_t N = 64, K = 128, G = 32;
    std::vector<int32_t> packed((K / 8) * N, 0);
    for (uint32_t k = 0; k < K; ++k)
      for (uint32_t n = 0; n < N; ++n) {
        const uint32_t q = (k * 7 + n * 3) % 16;
        uint32_t& word = reinterpret_cast<uint32_t&>(packed[(k / 8) * N + n]);
        word |= q << (4 * (k % 8));
      }
    std::vector<uint16_t> scales((K / G) * N);
    for (size_t i = 0; i < scales.size(); ++i)
      scales[i] = f16_bits_of(0.01f + 0.001f * static_cast<float>(i % 8));
    std::vector<uint8_t> zeros((K / G) * N, 8);
    const std::vector<uint64_t> shape = {N, K};
    ZT_TRY(w.begin_object("mlp.q_proj", "quantized_group", shape));
    ZT_TRY(w.set_object_attributes_json(
        R"({"bits": 4, "group_size": 32, "packing": "8_per_i32", "method": "gptq"})"));
    ZT_TRY(w.add_component("packed_weight", "i32", std::nullopt, as_bytes(packed), "zstd"));
    ZT_TRY(w.add_component("scales", "f16", std::nullopt, as_bytes(scales), "raw"));
    ZT_TRY(w.add_component("zeros", "u8", std::nullopt, zeros, "raw"));
    ZT_TRY(w.end_object());
  }
  {
    const std::vector<uint64_t> shape = {32};
    std::vector<int64_t> v(32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
    ZT_TRY(w.add_dense("position_ids", "i64", shape, as_bytes(v), "zstd"));
  }
  return w.finish();
}

}  // namespace

int run_demo_checkpoint(const Args& a) {
  if (a.pos.size() != 1) return usage_error("demo-checkpoint", "expects OUT.zt");
  auto r = write_demo(a.pos[0]);
  if (!r) return report(r.error(), a.pos[0]);
  std::fprintf(stderr, "wrote %s\n", a.pos[0].c_str());
  return kOk;
}

}  // namespace zt::cli
