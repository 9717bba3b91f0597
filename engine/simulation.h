// One discrete-event simulation: it owns the clock, the pending-event queue, the random-number
// streams. No global state, so many simulations can run side by side.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>

#include "engine/event_queue.h"
#include "engine/units.h"

namespace trainsim {

class Simulation {
 public:
  explicit Simulation(std::uint64_t seed = 0, std::unique_ptr<EventQueue> queue = nullptr);
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  Time now() const { return now_; }

  // Schedules `callback` at absolute `time`; time must not be in the past.
  EventHandle schedule_at(Time time, EventCallback callback);
  // Schedules `callback` after `delay` (>= 0) from now.
  EventHandle schedule_in(Time delay, EventCallback callback);
  bool cancel(EventHandle handle) { return queue_->cancel(handle); }
  // Moves a pending event to `time` (not in the past); false if it is no longer pending.
  bool reschedule(EventHandle handle, Time time);
  // reschedule() for each (handle, time) in order, at once (much faster for many events).
  void reschedule_all(std::span<const EventQueue::Move> moves);
  bool pending(EventHandle handle) const { return queue_->pending(handle); }

  // Runs events until none are left or stop() is called.
  void run();
  // Runs every event with time <= limit, then sets the clock to `limit` if it was reached.
  // Returns true if events remain after `limit`.
  bool run_until(Time limit);
  // Makes run()/run_until() return after the current event.
  void stop() { stop_requested_ = true; }

  std::uint64_t events_processed() const { return events_processed_; }
  std::size_t events_pending() const { return queue_->size(); }
  const EventQueue& queue() const { return *queue_; }

  std::uint64_t seed() const { return seed_; }
  // The random stream with this id: created on first use from (seed, id) alone, so a stream's
  // draws do not depend on which other streams exist or in which order they are used.
  std::mt19937_64& rng(std::uint64_t stream_id);

 private:
  bool step();

  std::unique_ptr<EventQueue> queue_;
  Time now_ = 0;
  std::uint64_t events_processed_ = 0;
  bool stop_requested_ = false;
  std::uint64_t seed_;
  std::map<std::uint64_t, std::mt19937_64> rng_streams_;
};

// SplitMix64 finaliser: a well-mixed 64-bit hash, used to derive independent stream seeds.
std::uint64_t mix64(std::uint64_t value);

}  // namespace trainsim
