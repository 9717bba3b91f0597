#include "engine/huge_page_allocator.h"

#include <cstdint>
#include <numeric>

#include <gtest/gtest.h>

namespace trainsim {
namespace {

TEST(HugePageAllocatorTest, LargeBlocksAreMappedOnHugePageBoundaries) {
  HugePageAllocator<std::uint64_t> allocator;
  // 3 MiB: mapped, starting on a 2 MiB boundary (huge pages cover only aligned ranges).
  const std::size_t n = (3u << 20) / sizeof(std::uint64_t);
  std::uint64_t* p = allocator.allocate(n);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (2u << 20), 0u);
  p[0] = 1;
  p[n - 1] = 2;  // the whole block is writable
  EXPECT_EQ(p[0] + p[n - 1], 3u);
  allocator.deallocate(p, n);
}

TEST(HugePageAllocatorTest, VectorKeepsItsContentsAcrossTheThreshold) {
  // Grows from ordinary heap blocks into mapped ones (2 MiB = 524,288 values) and shrinks back.
  BigVector<std::uint32_t> v;
  for (std::uint32_t i = 0; i < 1'000'000; ++i) v.push_back(i);
  std::uint64_t sum = std::accumulate(v.begin(), v.end(), std::uint64_t{0});
  EXPECT_EQ(sum, 999'999ull * 1'000'000ull / 2);
  v.resize(10);
  v.shrink_to_fit();
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[9], 9u);
  BigVector<std::uint32_t> copy = v;
  EXPECT_EQ(copy, v);
}

}  // namespace
}  // namespace trainsim
