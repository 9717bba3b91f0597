// A deliberate data race through parallel_for_index, for the ThreadSanitizer build only: the
// ctest tsan_sees_races expects TSan to report it, so a TSan build that could not see races
// (one whose parallel loops ran inside uninstrumented oneTBB) fails instead of passing quietly.
#include <cmath>
#include <cstdio>

#include "engine/parallel.h"

int main() {
  double sum = 0;  // written by every iteration without a lock: the race
  trainsim::parallel_for_index(100000, 2, [&](std::size_t i) {
    double work = 0;
    for (int k = 0; k < 100; ++k) work += std::sqrt(static_cast<double>(i + k));
    sum += work;
  });
  std::printf("%g\n", sum);
  return 0;
}
