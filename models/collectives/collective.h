// A collective operation among a fixed set of participants. Each participant joins when it is
// ready (its input is computed) and is told when its own part is done, so a late participant holds
// back everyone that depends on data from it.
#pragma once

#include <functional>
#include <vector>

#include "engine/simulation.h"

namespace trainsim::models {

class Collective {
 public:
  virtual ~Collective() = default;
  // `participant` is an index in [0, participants); `done` runs when its part is complete.
  virtual void join(int participant, std::function<void()> done) = 0;
};

// Analytic (alpha-beta) stand-in for any collective: once the last participant has joined, all
// finish after a fixed duration. Used for fast sweeps where contention is not modelled.
class AnalyticCollective final : public Collective {
 public:
  AnalyticCollective(Simulation& simulation, int participants, Time duration);
  void join(int participant, std::function<void()> done) override;

 private:
  Simulation& sim_;
  Time duration_;
  int joined_ = 0;
  std::vector<std::function<void()>> done_;
};

}  // namespace trainsim::models
