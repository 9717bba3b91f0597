#include "engine/simulation.h"

#include <utility>

#include "engine/check.h"

namespace trainsim {

std::uint64_t mix64(std::uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

Simulation::Simulation(std::uint64_t seed, std::unique_ptr<EventQueue> queue)
    : queue_(queue ? std::move(queue) : make_event_queue()), seed_(seed) {}

EventHandle Simulation::schedule_at(Time time, EventCallback callback) {
  TRAINSIM_ASSERT(time >= now_, "event scheduled in the past");
  return queue_->push(time, std::move(callback));
}

EventHandle Simulation::schedule_in(Time delay, EventCallback callback) {
  TRAINSIM_ASSERT(delay >= 0, "negative delay");
  return queue_->push(time_after(now_, delay), std::move(callback));
}

bool Simulation::reschedule(EventHandle handle, Time time) {
  TRAINSIM_ASSERT(time >= now_, "event rescheduled into the past");
  return queue_->reschedule(handle, time);
}

void Simulation::reschedule_all(std::span<const EventQueue::Move> moves) {
  for (const auto& move : moves) {
    TRAINSIM_ASSERT(move.second >= now_, "event rescheduled into the past");
  }
  queue_->reschedule_all(moves);
}

bool Simulation::step() {
  EventCallback callback;
  const Time time = queue_->pop(callback);
  TRAINSIM_ASSERT(time >= now_, "simulated time went backwards");
  now_ = time;
  ++events_processed_;
  callback();
  return true;
}

void Simulation::run() {
  stop_requested_ = false;
  while (!stop_requested_ && !queue_->empty()) step();
}

bool Simulation::run_until(Time limit) {
  TRAINSIM_ASSERT(limit >= now_, "run_until a time in the past");
  stop_requested_ = false;
  while (!stop_requested_ && !queue_->empty() && queue_->top_time() <= limit) step();
  if (!stop_requested_) now_ = limit;
  return !queue_->empty();
}

std::mt19937_64& Simulation::rng(std::uint64_t stream_id) {
  auto it = rng_streams_.find(stream_id);
  if (it == rng_streams_.end()) {
    const std::uint64_t stream_seed = mix64(seed_ ^ mix64(stream_id));
    it = rng_streams_.emplace(stream_id, std::mt19937_64(stream_seed)).first;
  }
  return it->second;
}

}  // namespace trainsim
