// An allocator for the engine's large arrays (flow state, pending events, routes): blocks of 2 MiB
// and more are mapped directly and marked for transparent huge pages (madvise), so a simulation of
// a million flows touches a few hundred pages instead of tens of thousands (first-touch faults and
// TLB misses were a third of a 1,024-GPU all-to-all's run time). Smaller blocks use the standard
// allocator, and systems without huge pages get ordinary pages; the contents are the same either
// way.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace trainsim {

namespace huge_pages {
// `bytes` of fresh zeroed memory, huge pages requested; throws std::bad_alloc when none is left.
void* map(std::size_t bytes);
void unmap(void* p, std::size_t bytes);
// Blocks at least this large are mapped (smaller ones would waste most of a huge page).
inline constexpr std::size_t kThreshold = std::size_t{2} << 20;
}  // namespace huge_pages

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= huge_pages::kThreshold) return static_cast<T*>(huge_pages::map(bytes));
    return std::allocator<T>{}.allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= huge_pages::kThreshold) {
      huge_pages::unmap(p, bytes);
    } else {
      std::allocator<T>{}.deallocate(p, n);
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// A vector whose storage is huge pages once it is large.
template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace trainsim
