#include "engine/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>

namespace trainsim::huge_pages {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
std::size_t rounded(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

void* map(std::size_t bytes) {
  // Huge pages need 2 MiB-aligned ranges: map one page more, and give back the unaligned ends.
  const std::size_t size = rounded(bytes);
  void* p =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(p, aligned - start);
  if (const std::size_t tail = start + kHugePage - aligned; tail > 0) {
    munmap(reinterpret_cast<void*>(aligned + size), tail);
  }
#ifdef MADV_HUGEPAGE
  // Advice only: a kernel without transparent huge pages refuses it and ordinary pages serve.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
}

void unmap(void* p, std::size_t bytes) { munmap(p, rounded(bytes)); }

}  // namespace trainsim::huge_pages
