// One suite run over every EventQueue implementation (ordering, FIFO ties, cancel, reschedule),
// plus a randomized comparison against a reference ordered container.
#include "engine/event_queue.h"

#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace trainsim {
namespace {

class EventQueueTest : public ::testing::TestWithParam<EventQueueKind> {
 protected:
  std::unique_ptr<EventQueue> queue_ = make_event_queue(GetParam());
  std::vector<int> fired_;

  EventHandle push(Time t, int tag) {
    return queue_->push(t, [this, tag] { fired_.push_back(tag); });
  }
  std::vector<Time> drain() {
    std::vector<Time> times;
    EventCallback cb;
    while (!queue_->empty()) {
      times.push_back(queue_->pop(cb));
      cb();
    }
    return times;
  }
};

TEST_P(EventQueueTest, PopsInTimeOrder) {
  push(30, 3);
  push(10, 1);
  push(20, 2);
  EXPECT_EQ(queue_->top_time(), 10);
  EXPECT_EQ(drain(), (std::vector<Time>{10, 20, 30}));
  EXPECT_EQ(fired_, (std::vector<int>{1, 2, 3}));
}

TEST_P(EventQueueTest, EqualTimesAreFifo) {
  for (int i = 0; i < 50; ++i) push(7, i);
  push(3, -1);
  drain();
  ASSERT_EQ(fired_.size(), 51u);
  EXPECT_EQ(fired_[0], -1);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(fired_[i + 1], i);
}

TEST_P(EventQueueTest, CancelRemovesOnlyThatEvent) {
  push(1, 1);
  const EventHandle h = push(2, 2);
  push(3, 3);
  EXPECT_TRUE(queue_->pending(h));
  EXPECT_TRUE(queue_->cancel(h));
  EXPECT_FALSE(queue_->pending(h));
  EXPECT_FALSE(queue_->cancel(h));  // already cancelled
  EXPECT_EQ(queue_->size(), 2u);
  drain();
  EXPECT_EQ(fired_, (std::vector<int>{1, 3}));
}

TEST_P(EventQueueTest, HandleGoesStaleWhenSlotIsReused) {
  const EventHandle first = push(5, 1);
  drain();
  const EventHandle second = push(6, 2);  // reuses the slot of `first`
  EXPECT_EQ(first.slot, second.slot);
  EXPECT_TRUE(queue_->pending(second));
  EXPECT_FALSE(queue_->pending(first));
  EXPECT_FALSE(queue_->cancel(first));
  EXPECT_FALSE(queue_->reschedule(first, 1));
  EXPECT_TRUE(queue_->pending(second));
  EXPECT_EQ(queue_->time_of(second), 6);
}

TEST_P(EventQueueTest, RescheduleEarlierAndLater) {
  const EventHandle a = push(10, 1);
  push(20, 2);
  const EventHandle c = push(30, 3);
  EXPECT_TRUE(queue_->reschedule(c, 5));   // 3 now first
  EXPECT_TRUE(queue_->reschedule(a, 25));  // 1 now between 2 and nothing
  EXPECT_EQ(queue_->time_of(a), 25);
  EXPECT_EQ(drain(), (std::vector<Time>{5, 20, 25}));
  EXPECT_EQ(fired_, (std::vector<int>{3, 2, 1}));
}

TEST_P(EventQueueTest, RescheduledEventOrdersAfterExistingEqualTimes) {
  const EventHandle a = push(10, 1);
  push(10, 2);
  push(10, 3);
  queue_->reschedule(a, 10);  // same time, fresh sequence number: now last among the three
  drain();
  EXPECT_EQ(fired_, (std::vector<int>{2, 3, 1}));
}

TEST_P(EventQueueTest, RescheduleAllMovesAsOneByOneInOrder) {
  // Four events at 10..40 and one already popped. Moving 4 -> 5, 2 -> 25, 1 -> 25, the popped
  // one -> 1 (skipped) and 3 -> 5 gives sequence numbers in that order: 4 before 3 at 5, and 2
  // before 1 at 25.
  const EventHandle gone = push(1, 0);
  const EventHandle a = push(10, 1);
  const EventHandle b = push(20, 2);
  const EventHandle c = push(30, 3);
  const EventHandle d = push(40, 4);
  EventCallback cb;
  EXPECT_EQ(queue_->pop(cb), 1);
  const std::vector<EventQueue::Move> moves = {{d, 5}, {b, 25}, {a, 25}, {gone, 1}, {c, 5}};
  queue_->reschedule_all(moves);
  EXPECT_EQ(queue_->size(), 4u);
  EXPECT_EQ(drain(), (std::vector<Time>{5, 5, 25, 25}));
  EXPECT_EQ(fired_, (std::vector<int>{4, 3, 2, 1}));
}

TEST_P(EventQueueTest, EventsPushedTogetherStayInOrderWhenSomeLeave) {
  // Five events pushed one after another for time 10 (the heaps keep them as one run), then
  // one for time 7. The third is cancelled, the first moved to 10 again (after the others, as a
  // new event would be), the fourth moved to 5; one more pushed for 10 comes after the first.
  std::vector<EventHandle> run;
  for (int i = 0; i < 5; ++i) run.push_back(push(10, i));
  push(7, 5);
  EXPECT_EQ(queue_->size(), 6u);
  EXPECT_TRUE(queue_->cancel(run[2]));
  EXPECT_TRUE(queue_->reschedule(run[0], 10));
  EXPECT_TRUE(queue_->reschedule(run[3], 5));
  push(10, 6);
  EXPECT_EQ(queue_->time_of(run[4]), 10);
  EXPECT_EQ(queue_->time_of(run[3]), 5);
  EXPECT_EQ(queue_->size(), 6u);
  EXPECT_EQ(drain(), (std::vector<Time>{5, 7, 10, 10, 10, 10}));
  EXPECT_EQ(fired_, (std::vector<int>{3, 5, 1, 4, 0, 6}));
}

TEST_P(EventQueueTest, MatchesReferenceUnderRandomOperations) {
  // Reference: map from (time, sequence) to tag, with our own sequence counter mirroring the
  // queue's rule (push and reschedule take the next sequence number). Times drawn from 1,000
  // values, then from 6 (many events per time, more times pending than a queue keeps at hand).
  std::mt19937_64 rng(12345);
  std::map<std::pair<Time, std::uint64_t>, int> reference;
  std::map<int, std::pair<EventHandle, std::pair<Time, std::uint64_t>>> live;
  std::uint64_t sequence = 0;
  int next_tag = 0;
  std::vector<int> expected;
  for (int op = 0; op < 40000; ++op) {
    const std::uint64_t times = op < 20000 ? 1000 : 6;
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 5 || live.empty()) {
      const Time t = static_cast<Time>(rng() % times);
      const int tag = next_tag++;
      live[tag] = {push(t, tag), {t, sequence}};
      reference[{t, sequence++}] = tag;
    } else if (kind < 7) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(queue_->cancel(it->second.first));
      reference.erase(it->second.second);
      live.erase(it);
    } else if (kind < 9 && rng() % 16 == 0) {
      // Many at once: a few, or a run of up to all live events and two more (both ways a heap
      // moves them; past the end the run wraps, so an event moves twice and the later wins).
      const std::size_t count = rng() % 2 == 0 ? rng() % 4 : rng() % (live.size() + 3);
      std::vector<EventQueue::Move> moves;
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      for (std::size_t m = 0; m < count; ++m, ++it) {
        if (it == live.end()) it = live.begin();
        const Time t = static_cast<Time>(rng() % times);
        moves.emplace_back(it->second.first, t);
        reference.erase(it->second.second);
        it->second.second = {t, sequence};
        reference[{t, sequence++}] = it->first;
      }
      queue_->reschedule_all(moves);
    } else if (kind < 9) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      const Time t = static_cast<Time>(rng() % times);
      ASSERT_TRUE(queue_->reschedule(it->second.first, t));
      reference.erase(it->second.second);
      it->second.second = {t, sequence};
      reference[{t, sequence++}] = it->first;
    } else {
      EventCallback cb;
      const Time t = queue_->pop(cb);
      cb();
      ASSERT_EQ(t, reference.begin()->first.first);
      expected.push_back(reference.begin()->second);
      live.erase(reference.begin()->second);
      reference.erase(reference.begin());
    }
    ASSERT_EQ(queue_->size(), reference.size());
  }
  for (const auto& [key, tag] : reference) expected.push_back(tag);
  drain();
  EXPECT_EQ(fired_, expected);
}

INSTANTIATE_TEST_SUITE_P(AllQueues, EventQueueTest,
                         ::testing::Values(EventQueueKind::kBinaryHeap,
                                           EventQueueKind::kQuaternaryHeap,
                                           EventQueueKind::kTimeBuckets),
                         [](const auto& info) {
                           switch (info.param) {
                             case EventQueueKind::kBinaryHeap:
                               return "BinaryHeap";
                             case EventQueueKind::kQuaternaryHeap:
                               return "QuaternaryHeap";
                             case EventQueueKind::kTimeBuckets:
                               return "TimeBuckets";
                           }
                           return "Unknown";
                         });

}  // namespace
}  // namespace trainsim
