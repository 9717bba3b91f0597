#include "engine/event_queue.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "engine/check.h"
#include "engine/slot_pool.h"

namespace trainsim {

template <int Arity>
EventHandle DaryHeapEventQueue<Arity>::push(Time time, EventCallback callback) {
  const std::uint32_t slot = take_slot(slots_, free_slots_);
  if (slot == heap_index_.size()) heap_index_.push_back(EventHandle::kInvalidSlot);
  Slot& s = slots_[slot];
  s.callback = std::move(callback);
  s.time = time;
  s.sequence = next_sequence_++;
  ++live_;
  if (last_pushed_ != kNone && slots_[last_pushed_].time == time &&
      slots_[last_pushed_].sequence + 1 == s.sequence) {
    // Pending (released slots are forgotten), last of its run (an event that leaves a run takes
    // a later sequence number) and just before this one in order: this one joins its run.
    slots_[last_pushed_].next = slot;
    s.prev = last_pushed_;
    heap_index_[slot] = kInRun;
  } else {
    heap_.push_back(key_of(slot));
    heap_index_[slot] = static_cast<std::uint32_t>(heap_.size() - 1);
    sift_up(heap_.size() - 1);
  }
  last_pushed_ = slot;
  return EventHandle{slot, s.generation};
}

template <int Arity>
bool DaryHeapEventQueue<Arity>::pending(EventHandle handle) const {
  return handle.slot < slots_.size() && slots_[handle.slot].generation == handle.generation &&
         heap_index_[handle.slot] != EventHandle::kInvalidSlot;
}

template <int Arity>
Time DaryHeapEventQueue<Arity>::time_of(EventHandle handle) const {
  return pending(handle) ? slots_[handle.slot].time : kTimeMax;
}

template <int Arity>
void DaryHeapEventQueue<Arity>::unlink(std::uint32_t slot) {
  Slot& s = slots_[slot];
  const std::uint32_t index = heap_index_[slot];
  if (index == kInRun) {
    slots_[s.prev].next = s.next;
    if (s.next != kNone) slots_[s.next].prev = s.prev;
  } else if (s.next != kNone) {
    // The run's next event is next in order: it takes this one's heap place (with a later key,
    // so it may go down).
    slots_[s.next].prev = kNone;
    place(index, key_of(s.next));
    sift_down(index);
  } else {
    remove_at(index);
  }
  s.next = s.prev = kNone;
  heap_index_[slot] = EventHandle::kInvalidSlot;
}

template <int Arity>
bool DaryHeapEventQueue<Arity>::cancel(EventHandle handle) {
  if (!pending(handle)) return false;
  slots_[handle.slot].callback = nullptr;
  unlink(handle.slot);
  --live_;
  release_slot(handle.slot);
  return true;
}

template <int Arity>
bool DaryHeapEventQueue<Arity>::reschedule(EventHandle handle, Time time) {
  if (!pending(handle)) return false;
  const std::uint32_t slot = handle.slot;
  Slot& s = slots_[slot];
  const std::uint32_t index = heap_index_[slot];
  s.time = time;
  s.sequence = next_sequence_++;
  if (index != kInRun && s.next == kNone) {
    // Alone in the heap: its entry moves.
    const Entry old = heap_[index];
    heap_[index] = key_of(slot);
    if (before(heap_[index], old)) {
      sift_up(index);
    } else {
      sift_down(index);
    }
    return true;
  }
  unlink(slot);
  heap_.push_back(key_of(slot));
  heap_index_[slot] = static_cast<std::uint32_t>(heap_.size() - 1);
  sift_up(heap_.size() - 1);
  return true;
}

template <int Arity>
void DaryHeapEventQueue<Arity>::reschedule_all(std::span<const Move> moves) {
  // One by one, k moves cost about k log n sifts; re-heaping costs about n (Floyd's bottom-up
  // construction), so it pays once k is a sizeable share of n. Either way every event gets the
  // key reschedule() would give it, and keys decide the order of pops, not the heap's layout.
  if (moves.size() * 8 < heap_.size()) {
    for (const auto& [handle, time] : moves) reschedule(handle, time);
    return;
  }
  for (const auto& [handle, time] : moves) {
    if (!pending(handle)) continue;
    const std::uint32_t slot = handle.slot;
    Slot& s = slots_[slot];
    s.time = time;
    s.sequence = next_sequence_++;
    if (heap_index_[slot] != kInRun && s.next == kNone) {
      heap_[heap_index_[slot]] = key_of(slot);
    } else {
      // Out of its run, into the heap (sifts on a heap whose keys are being rewritten do no
      // harm: it is rebuilt below).
      unlink(slot);
      heap_.push_back(key_of(slot));
      heap_index_[slot] = static_cast<std::uint32_t>(heap_.size() - 1);
    }
  }
  if (heap_.size() < 2) return;
  for (std::size_t parent = (heap_.size() - 2) / Arity + 1; parent-- > 0;) sift_down(parent);
}

template <int Arity>
Time DaryHeapEventQueue<Arity>::top_time() const {
  TRAINSIM_ASSERT(!heap_.empty(), "top_time on an empty event queue");
  return heap_.front().time;
}

template <int Arity>
Time DaryHeapEventQueue<Arity>::pop(EventCallback& callback) {
  TRAINSIM_ASSERT(!heap_.empty(), "pop on an empty event queue");
  const Entry top = heap_.front();
  callback = std::move(slots_[top.slot].callback);
  slots_[top.slot].callback = nullptr;
  unlink(top.slot);
  --live_;
  release_slot(top.slot);
  return top.time;
}

template <int Arity>
std::string_view DaryHeapEventQueue<Arity>::name() const {
  if constexpr (Arity == 2) {
    return "binary-heap";
  } else if constexpr (Arity == 4) {
    return "4-ary-heap";
  } else {
    return "d-ary-heap";
  }
}

template <int Arity>
void DaryHeapEventQueue<Arity>::place(std::size_t index, const Entry& entry) {
  heap_[index] = entry;
  heap_index_[entry.slot] = static_cast<std::uint32_t>(index);
}

template <int Arity>
void DaryHeapEventQueue<Arity>::sift_up(std::size_t index) {
  const Entry moving = heap_[index];
  while (index > 0) {
    const std::size_t parent = (index - 1) / Arity;
    if (!before(moving, heap_[parent])) break;
    place(index, heap_[parent]);
    index = parent;
  }
  place(index, moving);
}

template <int Arity>
void DaryHeapEventQueue<Arity>::sift_down(std::size_t index) {
  const Entry moving = heap_[index];
  const std::size_t n = heap_.size();
  while (true) {
    const std::size_t first_child = index * Arity + 1;
    if (first_child >= n) break;
    std::size_t best = first_child;
    const std::size_t last_child = std::min(first_child + Arity, n);
    for (std::size_t c = first_child + 1; c < last_child; ++c) {
      if (before(heap_[c], heap_[best])) best = c;
    }
    if (!before(heap_[best], moving)) break;
    place(index, heap_[best]);
    index = best;
  }
  place(index, moving);
}

template <int Arity>
void DaryHeapEventQueue<Arity>::remove_at(std::size_t index) {
  const std::size_t last = heap_.size() - 1;
  if (index == last) {
    heap_.pop_back();
    return;
  }
  const Entry removed = heap_[index];
  place(index, heap_[last]);
  heap_.pop_back();
  if (before(heap_[index], removed)) {
    sift_up(index);
  } else {
    sift_down(index);
  }
}

template <int Arity>
void DaryHeapEventQueue<Arity>::release_slot(std::uint32_t slot) {
  ++slots_[slot].generation;
  heap_index_[slot] = EventHandle::kInvalidSlot;
  free_slots_.push_back(slot);
  if (slot == last_pushed_) last_pushed_ = kNone;
}

template class DaryHeapEventQueue<2>;
template class DaryHeapEventQueue<4>;

std::uint32_t TimeBucketEventQueue::find_recent(Time time) const {
  for (const std::uint32_t b : recent_) {
    if (is_bucket_of(b, time)) return b;
  }
  return EventHandle::kInvalidSlot;
}

void TimeBucketEventQueue::remember(std::uint32_t bucket) const {
  recent_[recent_next_] = bucket;
  recent_next_ = (recent_next_ + 1) % kRecent;
}

void TimeBucketEventQueue::insert(std::uint32_t slot, Time time) {
  std::uint32_t bucket = find_recent(time);
  if (bucket == EventHandle::kInvalidSlot) {
    // No recent bucket of this time: any other bucket of it holds only earlier events.
    bucket = take_slot(buckets_, free_buckets_);
    buckets_[bucket].time = time;
    heap_.push_back(Queued{time, next_sequence_, bucket});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<Queued>{});
    remember(bucket);
  }
  ++next_sequence_;
  Slot& s = slots_[slot];
  s.time = time;
  s.bucket = bucket;
  s.pending = true;
  buckets_[bucket].entries.push_back(Entry{slot, s.version});
  ++buckets_[bucket].live;
  ++live_;
}

void TimeBucketEventQueue::detach(std::uint32_t slot) {
  Slot& s = slots_[slot];
  ++s.version;  // its bucket entry becomes a tombstone
  s.pending = false;
  Bucket& b = buckets_[s.bucket];
  --live_;
  if (--b.live == 0) {
    // Nothing left in it: no event joins it again (recent lookups want live buckets); it stays
    // in the heap, empty, until it reaches the top.
    b.entries.clear();
    b.head = 0;
  }
}

EventHandle TimeBucketEventQueue::push(Time time, EventCallback callback) {
  const std::uint32_t slot = take_slot(slots_, free_slots_);
  slots_[slot].callback = std::move(callback);
  insert(slot, time);
  return EventHandle{slot, slots_[slot].generation};
}

bool TimeBucketEventQueue::pending(EventHandle handle) const {
  return handle.slot < slots_.size() && slots_[handle.slot].generation == handle.generation &&
         slots_[handle.slot].pending;
}

Time TimeBucketEventQueue::time_of(EventHandle handle) const {
  return pending(handle) ? slots_[handle.slot].time : kTimeMax;
}

bool TimeBucketEventQueue::cancel(EventHandle handle) {
  if (!pending(handle)) return false;
  detach(handle.slot);
  Slot& s = slots_[handle.slot];
  s.callback = nullptr;
  ++s.generation;
  free_slots_.push_back(handle.slot);
  return true;
}

bool TimeBucketEventQueue::reschedule(EventHandle handle, Time time) {
  if (!pending(handle)) return false;
  detach(handle.slot);
  insert(handle.slot, time);
  return true;
}

std::uint32_t TimeBucketEventQueue::front_bucket() const {
  TRAINSIM_ASSERT(live_ > 0, "front of an empty event queue");
  while (true) {
    const std::uint32_t b = heap_.front().bucket;
    if (buckets_[b].live > 0) return b;
    // Empty: every event in it was cancelled, moved or popped.
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Queued>{});
    heap_.pop_back();
    for (std::uint32_t& r : recent_) {
      if (r == b) r = EventHandle::kInvalidSlot;
    }
    free_buckets_.push_back(b);
  }
}

Time TimeBucketEventQueue::top_time() const { return buckets_[front_bucket()].time; }

Time TimeBucketEventQueue::pop(EventCallback& callback) {
  const std::uint32_t bucket = front_bucket();
  Bucket& b = buckets_[bucket];
  while (true) {
    const Entry e = b.entries[b.head++];
    Slot& s = slots_[e.slot];
    if (s.version != e.version) continue;  // tombstone
    const Time time = b.time;
    callback = std::move(s.callback);
    s.callback = nullptr;
    detach(e.slot);
    ++s.generation;
    free_slots_.push_back(e.slot);
    return time;
  }
}

std::unique_ptr<EventQueue> make_event_queue(EventQueueKind kind) {
  switch (kind) {
    case EventQueueKind::kBinaryHeap:
      return std::make_unique<BinaryHeapEventQueue>();
    case EventQueueKind::kQuaternaryHeap:
      return std::make_unique<QuaternaryHeapEventQueue>();
    case EventQueueKind::kTimeBuckets:
      return std::make_unique<TimeBucketEventQueue>();
  }
  TRAINSIM_ASSERT(false, "unknown event queue kind");
  return nullptr;
}

}  // namespace trainsim
