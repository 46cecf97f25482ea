// Bytes that grow in place, for decodes whose size only decoding tells.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <utility>

namespace zt {

// A buffer resized without a second copy of itself. From 1 MiB on it is
// its own anonymous mapping, grown and shrunk by mremap, which moves pages
// instead of copying them: a buffer grown step by step as a stream decodes
// peaks at what it holds, where a std::vector held its old and new buffers
// at once (up to 3x what was decoded), zero-filled each new one, and kept
// up to twice its size as capacity (realloc alone is not enough: below
// glibc's mmap threshold, which rises to 32 MiB as large blocks are freed,
// it copies within the heap and leaves the old block resident). Below
// 1 MiB it is malloc'd. New bytes are not initialised. A mapping of 4 MiB
// or more is advised for transparent huge pages: the decode that fills it
// then takes a page fault per 2 MiB instead of per 4 KiB (a copy-mode
// reader's 32 x 32 MiB components decoded into its cache in 295 - 322 ms
// against 483 - 486, 2-core VM, 2026-12-06).
class GrowingBytes {
 public:
  GrowingBytes() = default;
  GrowingBytes(GrowingBytes&& o) noexcept { *this = std::move(o); }
  GrowingBytes& operator=(GrowingBytes&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      size_ = std::exchange(o.size_, 0);
      mapped_ = std::exchange(o.mapped_, 0);
    }
    return *this;
  }
  GrowingBytes(const GrowingBytes&) = delete;
  GrowingBytes& operator=(const GrowingBytes&) = delete;
  ~GrowingBytes() { release(); }

  uint8_t* data() const { return p_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<const uint8_t> bytes() const { return {p_, size_}; }

  // Resizes to n bytes, keeping the first min(n, size()); false (nothing
  // changed) when the memory cannot be had.
  [[nodiscard]] bool resize(size_t n) {
    if (n == size_) return true;
    if (n == 0) {
      release();
      return true;
    }
    if (mapped_) return remap(n);
    if (n < kMapFrom) {
      void* grown = std::realloc(p_, n);
      if (!grown) return false;
      p_ = static_cast<uint8_t*>(grown);
      size_ = n;
      return true;
    }
    // From the heap to a mapping of its own: one copy of under 1 MiB.
    const size_t length = page_rounded(n);
    if (length == 0) return false;
    void* m = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return false;
    advise_huge_pages(m, length);
    if (size_) std::memcpy(m, p_, size_);
    std::free(p_);
    p_ = static_cast<uint8_t*>(m);
    size_ = n;
    mapped_ = length;
    return true;
  }

 private:
  static constexpr size_t kMapFrom = size_t{1} << 20;
  static constexpr size_t kPage = 4096;  // mremap's unit (larger pages are multiples of it)

  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kHugePagesFrom = 2 * kHugePage;  // holds a whole one wherever it starts

  // MADV_HUGEPAGE over the whole 2 MiB pages of a mapping of
  // kHugePagesFrom bytes or more. A hint: where the kernel has no
  // transparent huge pages it fails, and nothing changes.
  static void advise_huge_pages(void* m, size_t length) {
    if (length < kHugePagesFrom) return;
    const uintptr_t at = reinterpret_cast<uintptr_t>(m);
    const uintptr_t start = (at + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
    const uintptr_t end = (at + length) & ~(uintptr_t{kHugePage} - 1);
    if (end > start) (void)::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
  }

  // n rounded up to whole pages; 0 where that overflows.
  static size_t page_rounded(size_t n) {
    return n > SIZE_MAX - (kPage - 1) ? 0 : (n + kPage - 1) & ~(kPage - 1);
  }

  bool remap(size_t n) {
    const size_t length = page_rounded(n);
    if (length == 0) return false;
    if (length != mapped_) {
      void* m = ::mremap(p_, mapped_, length, MREMAP_MAYMOVE);
      if (m == MAP_FAILED) return false;
      if (length > mapped_) advise_huge_pages(m, length);  // the advice covered the old length
      p_ = static_cast<uint8_t*>(m);
      mapped_ = length;
    }
    size_ = n;
    return true;
  }

  void release() {
    if (mapped_)
      ::munmap(p_, mapped_);
    else
      std::free(p_);
    p_ = nullptr;
    size_ = 0;
    mapped_ = 0;
  }

  uint8_t* p_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // the mapping's length, 0 while on the heap
};

}  // namespace zt
