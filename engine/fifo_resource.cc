#include "engine/fifo_resource.h"

#include <utility>

#include "engine/check.h"

namespace trainsim {

FifoResource::FifoResource(Simulation& simulation, std::string name, double rate)
    : sim_(simulation), name_(std::move(name)), rate_(rate) {
  TRAINSIM_ASSERT(rate > 0.0, "resource rate must be positive");
}

void FifoResource::submit(Job job) {
  queue_.push_back(std::move(job));
  if (!busy_) start_next();
}

void FifoResource::submit_duration(Time duration, Done on_done) {
  TRAINSIM_ASSERT(duration >= 0, "negative job duration");
  submit([this, duration, on_done = std::move(on_done)](Done done) mutable {
    sim_.schedule_in(duration, [done = std::move(done), on_done = std::move(on_done)] {
      done();
      if (on_done) on_done();
    });
  });
}

void FifoResource::submit_work(double amount, Done on_done) {
  TRAINSIM_ASSERT(amount >= 0.0, "negative work amount");
  submit_duration(time_from_seconds(amount / rate_), std::move(on_done));
}

void FifoResource::start_next() {
  while (!busy_ && !queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    started_at_ = sim_.now();
    const std::uint64_t number = ++jobs_started_;
    // The job may finish synchronously; finish() then clears busy_ and the loop goes on.
    job([this, number] { finish(number); });
  }
}

void FifoResource::finish(std::uint64_t job_number) {
  TRAINSIM_ASSERT(busy_ && job_number == jobs_started_, "job finished twice or out of turn");
  busy_ = false;
  busy_time_ += sim_.now() - started_at_;
  ++jobs_completed_;
  // Start the next job after the caller's own completion work, at the same instant.
  if (!queue_.empty()) sim_.schedule_in(0, [this] { start_next(); });
}

}  // namespace trainsim
