// The pending-event set of a simulation, behind a small interface so implementations can be
// swapped and benchmarked (bench/scheduler_bench.cc). Events are ordered by (time, sequence
// number): equal times pop in the order they were scheduled (FIFO), which makes runs reproducible.
//
// Implementations and costs (n pending events):
//   DaryHeapEventQueue<2>  binary heap   push/pop/cancel/reschedule O(log2 n)
//   DaryHeapEventQueue<4>  4-ary heap    push/cancel O(log4 n), pop O(4 log4 n); shallower, more
//                                        cache friendly for large n
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

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
  bool pending(EventHandle handle) const override;
  Time time_of(EventHandle handle) const override;
  bool empty() const override { return heap_.empty(); }
  std::size_t size() const override { return heap_.size(); }
  Time top_time() const override;
  Time pop(EventCallback& callback) override;
  std::string_view name() const override;

 private:
  struct Entry {
    Time time;
    std::uint64_t sequence;
    std::uint32_t slot;
  };
  struct Slot {
    EventCallback callback;
    std::uint32_t heap_index = 0;
    std::uint32_t generation = 0;
  };

  static bool before(const Entry& a, const Entry& b) {
    return a.time < b.time || (a.time == b.time && a.sequence < b.sequence);
  }
  void place(std::size_t index, const Entry& entry);
  void sift_up(std::size_t index);
  void sift_down(std::size_t index);
  void remove_at(std::size_t index);
  void release_slot(std::uint32_t slot);

  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
};

using BinaryHeapEventQueue = DaryHeapEventQueue<2>;
using QuaternaryHeapEventQueue = DaryHeapEventQueue<4>;

enum class EventQueueKind { kBinaryHeap, kQuaternaryHeap };

std::unique_ptr<EventQueue> make_event_queue(EventQueueKind kind = EventQueueKind::kBinaryHeap);

}  // namespace trainsim
