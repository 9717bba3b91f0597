// Event-queue throughput (events/s) for each EventQueue implementation, on two patterns:
//   Hold:   the classic hold model: n pending events; each pop schedules one new event at
//           now + a random delay (all times distinct).
//   Bursts: synchronous steps: n events at each of a few times, as when all ranks of a
//           collective finish a step together.
#include <random>

#include <benchmark/benchmark.h>

#include "engine/event_queue.h"

namespace trainsim {
namespace {

void BM_Hold(benchmark::State& state, EventQueueKind kind) {
  const auto pending = static_cast<int>(state.range(0));
  auto queue = make_event_queue(kind);
  std::mt19937_64 rng(1);
  for (int i = 0; i < pending; ++i) queue->push(static_cast<Time>(rng() % 1'000'000), [] {});
  EventCallback callback;
  for (auto _ : state) {
    const Time now = queue->pop(callback);
    queue->push(now + 1 + static_cast<Time>(rng() % 1'000'000), [] {});
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Bursts(benchmark::State& state, EventQueueKind kind) {
  const auto width = static_cast<int>(state.range(0));
  auto queue = make_event_queue(kind);
  Time now = 0;
  for (int i = 0; i < width; ++i) queue->push(now + 10, [] {});
  EventCallback callback;
  for (auto _ : state) {
    // Pop the whole burst, scheduling the next step's burst as each event fires.
    for (int i = 0; i < width; ++i) {
      now = queue->pop(callback);
      queue->push(now + 10, [] {});
    }
  }
  state.SetItemsProcessed(state.iterations() * width);
}

BENCHMARK_CAPTURE(BM_Hold, binary_heap, EventQueueKind::kBinaryHeap)->Arg(1 << 10)->Arg(1 << 16);
BENCHMARK_CAPTURE(BM_Hold, quaternary_heap, EventQueueKind::kQuaternaryHeap)
    ->Arg(1 << 10)
    ->Arg(1 << 16);
BENCHMARK_CAPTURE(BM_Hold, time_buckets, EventQueueKind::kTimeBuckets)->Arg(1 << 10)->Arg(1 << 16);
BENCHMARK_CAPTURE(BM_Bursts, binary_heap, EventQueueKind::kBinaryHeap)->Arg(1024);
BENCHMARK_CAPTURE(BM_Bursts, quaternary_heap, EventQueueKind::kQuaternaryHeap)->Arg(1024);
BENCHMARK_CAPTURE(BM_Bursts, time_buckets, EventQueueKind::kTimeBuckets)->Arg(1024);

}  // namespace
}  // namespace trainsim
