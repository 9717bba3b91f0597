// Independent work in parallel with oneTBB: loop iterations (body(i) for every i in [0, n), on at
// most `threads` threads, 0: all cores), or two calls side by side (run_side_by_side). The
// ThreadSanitizer build (TRAINSIM_TSAN) runs them on std::threads instead: Debian's oneTBB is not
// instrumented, so TSan cannot see the synchronisation inside it and would report its hand-offs
// between threads as races.
#pragma once

#include <cstddef>

#ifdef TRAINSIM_TSAN
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#else
#include <algorithm>
#include <exception>

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

namespace trainsim {

// An exception thrown by an iteration stops the loop and is rethrown here (the first one, if
// several iterations throw).
template <class Body>
void parallel_for_index(std::size_t n, int threads, const Body& body) {
#ifdef TRAINSIM_TSAN
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min(threads > 0 ? static_cast<std::size_t>(threads) : cores, n);
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) {
        try {
          body(i);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(failure_mutex);
          if (!failure) failure = std::current_exception();
          next = n;
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
#else
  if (threads > 0) {
    // More threads than cores gain nothing (and oneTBB warns on stderr that it cannot add them).
    tbb::task_arena arena(std::min(threads, tbb::info::default_concurrency()));
    arena.execute([&] { tbb::parallel_for(std::size_t{0}, n, body); });
  } else {
    tbb::parallel_for(std::size_t{0}, n, body);
  }
#endif
}

// Runs `first` and `second`, side by side unless `threads` is 1 (then one after the other). In a
// loop of parallel_for_index, `second` waits for a free thread of its arena, and runs after
// `first` on this thread if none frees up; this thread takes no other iteration of the loop while
// it waits for `second`. An exception from either is rethrown here (first's, when both throw).
template <class First, class Second>
void run_side_by_side(int threads, const First& first, const Second& second) {
  if (threads == 1) {
    first();
    second();
    return;
  }
  std::exception_ptr second_error;
  auto run_second = [&] {
    try {
      second();
    } catch (...) {
      second_error = std::current_exception();
    }
  };
  // Runs `first`, then waits for `second` (also when `first` throws).
  auto first_then = [&](const auto& wait_for_second) {
    try {
      first();
    } catch (...) {
      wait_for_second();
      throw;
    }
    wait_for_second();
  };
#ifdef TRAINSIM_TSAN
  std::thread beside(run_second);
  first_then([&] { beside.join(); });
#else
  tbb::this_task_arena::isolate([&] {
    tbb::task_group group;
    group.run(run_second);
    first_then([&] { group.wait(); });
  });
#endif
  if (second_error) std::rethrow_exception(second_error);
}

}  // namespace trainsim
