// The pending-event set of a simulation, behind a small interface so implementations can be
// swapped and benchmarked (bench/scheduler_bench.cc). Events are ordered by (time, sequence
// number): equal times pop in the order they were scheduled (FIFO), which makes runs reproducible.
//
// Implementations and costs (n pending events):
//   DaryHeapEventQueue<2>  binary heap   push/pop/cancel/reschedule O(log2 n)
//   DaryHeapEventQueue<4>  4-ary heap    push/cancel O(log4 n), pop O(4 log4 n); shallower
//                          Both heaps keep a run of events pushed one after another for one
//                          time (a synchronous step's completions) as one heap entry: its later
//                          events follow the first in a list and pop in O(Arity) each.
//   TimeBucketEventQueue   FIFO buckets of events at one time, binary heap over the b buckets:
//                          push/pop O(1) into a bucket of a recently used time, O(log b) for a
//                          new bucket; cancel and reschedule O(1) plus lazy clean-up. Fastest
//                          when many events share a time, as in synchronous collectives; the
//                          4-ary heap (the default) when most events have their own time, as in
//                          training steps (see bench/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/huge_page_allocator.h"
#include "engine/units.h"

namespace trainsim {

using EventCallback = std::function<void()>;

// Refers to one scheduled event. Stays safe to use after the event fired or was cancelled: the
// queue then reports it as no longer pending.
struct EventHandle {
  static constexpr std::uint32_t kInvalidSlot = 0xffffffffu;
  std::uint32_t slot = kInvalidSlot;
  std::uint32_t generation = 0;
  bool valid() const { return slot != kInvalidSlot; }
};

class EventQueue {
 public:
  virtual ~EventQueue() = default;

  // Adds an event; it gets the next sequence number.
  virtual EventHandle push(Time time, EventCallback callback) = 0;
  // Removes a pending event. Returns false if it already fired or was cancelled.
  virtual bool cancel(EventHandle handle) = 0;
  // Moves a pending event to `time`. It gets a fresh sequence number, i.e. it orders after events
  // already scheduled at the same time. Returns false if the event is no longer pending.
  virtual bool reschedule(EventHandle handle, Time time) = 0;
  // The same as reschedule(handle, time) for each pair in order (the sequence numbers are given
  // in that order, so events pop exactly as after those calls); events no longer pending are
  // skipped. A heap moving a large share of its events re-heaps them at once.
  using Move = std::pair<EventHandle, Time>;
  virtual void reschedule_all(std::span<const Move> moves) {
    for (const auto& [handle, time] : moves) reschedule(handle, time);
  }
  virtual bool pending(EventHandle handle) const = 0;
  // Time of a pending event; kTimeMax if it is not pending.
  virtual Time time_of(EventHandle handle) const = 0;

  virtual bool empty() const = 0;
  virtual std::size_t size() const = 0;
  // Time of the earliest event. Precondition: !empty().
  virtual Time top_time() const = 0;
  // Removes the earliest event, moves its callback into `callback` and returns its time.
  // Precondition: !empty().
  virtual Time pop(EventCallback& callback) = 0;

  virtual std::string_view name() const = 0;
};

// Indexed d-ary min-heap of (time, sequence) keys with a slot table for handles.
template <int Arity>
class DaryHeapEventQueue final : public EventQueue {
  static_assert(Arity >= 2);

 public:
  EventHandle push(Time time, EventCallback callback) override;
  bool cancel(EventHandle handle) override;
  bool reschedule(EventHandle handle, Time time) override;
  void reschedule_all(std::span<const Move> moves) override;
  bool pending(EventHandle handle) const override;
  Time time_of(EventHandle handle) const override;
  bool empty() const override { return live_ == 0; }
  std::size_t size() const override { return live_; }
  Time top_time() const override;
  Time pop(EventCallback& callback) override;
  std::string_view name() const override;

 private:
  struct Entry {
    Time time;
    std::uint64_t sequence;
    std::uint32_t slot;
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;
  // Runs: an event pushed right after another (the next sequence number) for the same time
  // follows it in order, so nothing pending can come between them. Only a run's first event is
  // in the heap; when it pops (or leaves), the next takes its heap place. Per slot, apart from
  // the heap, so that heap moves touch only the small index array.
  struct Slot {
    EventCallback callback;
    Time time = 0;  // its key while pending
    std::uint64_t sequence = 0;
    std::uint32_t generation = 0;
    std::uint32_t next = kNone;  // in its run
    std::uint32_t prev = kNone;
  };
  static constexpr std::uint32_t kInRun = 0xfffffffeu;  // heap_index_ of a run's later events

  static bool before(const Entry& a, const Entry& b) {
    return a.time < b.time || (a.time == b.time && a.sequence < b.sequence);
  }
  void place(std::size_t index, const Entry& entry);
  void sift_up(std::size_t index);
  void sift_down(std::size_t index);
  void remove_at(std::size_t index);
  void release_slot(std::uint32_t slot);
  // Takes a pending event out of the heap or its run (the run's next event takes its place).
  void unlink(std::uint32_t slot);
  Entry key_of(std::uint32_t slot) const {
    return Entry{slots_[slot].time, slots_[slot].sequence, slot};
  }

  BigVector<Entry> heap_;
  BigVector<Slot> slots_;
  BigVector<std::uint32_t> heap_index_;  // by slot; kInRun; kInvalidSlot when not pending
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  std::uint32_t last_pushed_ = kNone;  // while pending: a push may join its run
  std::size_t live_ = 0;
};

using BinaryHeapEventQueue = DaryHeapEventQueue<2>;
using QuaternaryHeapEventQueue = DaryHeapEventQueue<4>;

// Events grouped by exact time: FIFO buckets of events at one time and a min-heap of the buckets
// by (time, sequence number of their first event). An event joins a bucket of its time only if
// that bucket is among the few most recently used, else it opens a new one; so all events of a
// bucket precede, in sequence, those of any later bucket of the same time, and the order is the
// same (time, sequence) order as the heaps' without a lookup by time. Cancelled or moved events
// leave tombstones skipped on pop; a bucket is freed when it reaches the top empty.
class TimeBucketEventQueue final : public EventQueue {
 public:
  EventHandle push(Time time, EventCallback callback) override;
  bool cancel(EventHandle handle) override;
  bool reschedule(EventHandle handle, Time time) override;
  bool pending(EventHandle handle) const override;
  Time time_of(EventHandle handle) const override;
  bool empty() const override { return live_ == 0; }
  std::size_t size() const override { return live_; }
  Time top_time() const override;
  Time pop(EventCallback& callback) override;
  std::string_view name() const override { return "time-buckets"; }

 private:
  struct Slot {
    EventCallback callback;
    Time time = 0;
    std::uint32_t generation = 0;  // bumped when the slot is freed: invalidates handles
    std::uint32_t version = 0;     // bumped when the event moves: invalidates bucket entries
    std::uint32_t bucket = 0;
    bool pending = false;
  };
  struct Entry {
    std::uint32_t slot;
    std::uint32_t version;
  };
  struct Bucket {
    Time time = 0;
    std::vector<Entry> entries;
    std::size_t head = 0;
    std::size_t live = 0;
  };
  struct Queued {  // a bucket in the heap
    Time time;
    std::uint64_t sequence;  // of the bucket's first event
    std::uint32_t bucket;
    bool operator>(const Queued& o) const {
      return time > o.time || (time == o.time && sequence > o.sequence);
    }
  };

  void insert(std::uint32_t slot, Time time);
  void detach(std::uint32_t slot);
  bool is_bucket_of(std::uint32_t bucket, Time time) const {
    return bucket < buckets_.size() && buckets_[bucket].time == time && buckets_[bucket].live > 0;
  }
  // Frees empty buckets at the front; returns the bucket of the earliest event.
  std::uint32_t front_bucket() const;

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  mutable std::vector<Bucket> buckets_;
  mutable std::vector<std::uint32_t> free_buckets_;
  mutable std::vector<Queued> heap_;  // min-heap by (time, sequence)
  std::uint64_t next_sequence_ = 0;
  // The buckets last opened, the only ones an event may join: pushes typically alternate between
  // a handful of times (now, now + a latency, ...).
  static constexpr std::size_t kRecent = 4;
  mutable std::uint32_t recent_[kRecent] = {};
  mutable std::size_t recent_next_ = 0;
  std::uint32_t find_recent(Time time) const;
  void remember(std::uint32_t bucket) const;
  std::size_t live_ = 0;
};

enum class EventQueueKind { kBinaryHeap, kQuaternaryHeap, kTimeBuckets };

std::unique_ptr<EventQueue> make_event_queue(EventQueueKind kind = EventQueueKind::kQuaternaryHeap);

}  // namespace trainsim
