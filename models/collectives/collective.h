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
  // Participants [0, participants) all join now; `done(participant)` runs when its part is
  // complete. `alone`: the caller's word that no other traffic uses the network until every
  // participant is done, so that a collective may simulate one participant of each class of
  // symmetric ones (the flat ring and all-to-all do); by default they join one by one.
  virtual void join_all(int participants, const std::function<void(int)>& done, bool alone);
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
