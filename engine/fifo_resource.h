// A FIFO server: jobs wait in arrival order and hold the server one at a time (a GPU compute
// stream, a copy engine, a CPU worker, a storage device). A job either lasts a fixed duration,
// takes `amount / rate` for a server with a rate, or holds the server until it says it is done.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include "engine/simulation.h"

namespace trainsim {

class FifoResource {
 public:
  using Done = std::function<void()>;
  // A job is started with a `done` function that it must call exactly once when it finishes.
  using Job = std::function<void(Done done)>;

  // `rate` is in work units per second (e.g. FLOP/s, bytes/s); 1 means work is given in seconds.
  FifoResource(Simulation& simulation, std::string name, double rate = 1.0);
  FifoResource(const FifoResource&) = delete;
  FifoResource& operator=(const FifoResource&) = delete;

  void submit(Job job);
  void submit_duration(Time duration, Done on_done);
  void submit_work(double amount, Done on_done);

  const std::string& name() const { return name_; }
  double rate() const { return rate_; }
  bool busy() const { return busy_; }
  std::size_t queued() const { return queue_.size(); }
  Time busy_time() const { return busy_time_; }
  std::uint64_t jobs_completed() const { return jobs_completed_; }

 private:
  void start_next();
  void finish(std::uint64_t job_number);

  Simulation& sim_;
  std::string name_;
  double rate_;
  std::deque<Job> queue_;
  bool busy_ = false;
  Time started_at_ = 0;
  Time busy_time_ = 0;
  std::uint64_t jobs_started_ = 0;
  std::uint64_t jobs_completed_ = 0;
};

}  // namespace trainsim
