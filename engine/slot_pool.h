// Index-addressed storage with reuse: take a free index or grow the vector by one. Shared by the
// event queues and the flow network, whose handles and ids are such indices.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/check.h"

namespace trainsim {

// Returns a free index of `items`, reusing one from `free_indices` or appending a default item.
template <class T, class A>
std::uint32_t take_slot(std::vector<T, A>& items, std::vector<std::uint32_t>& free_indices) {
  if (!free_indices.empty()) {
    const std::uint32_t index = free_indices.back();
    free_indices.pop_back();
    return index;
  }
  TRAINSIM_ASSERT(items.size() < 0xffffffffu, "too many slots");
  items.emplace_back();
  return static_cast<std::uint32_t>(items.size() - 1);
}

}  // namespace trainsim
