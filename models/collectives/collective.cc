#include "models/collectives/collective.h"

#include <utility>

#include "engine/check.h"

namespace trainsim::models {

void Collective::join_all(int participants, const std::function<void(int)>& done, bool) {
  for (int p = 0; p < participants; ++p) join(p, [done, p] { done(p); });
}

AnalyticCollective::AnalyticCollective(Simulation& simulation, int participants, Time duration)
    : sim_(simulation), duration_(duration), done_(participants) {}

void AnalyticCollective::join(int participant, std::function<void()> done) {
  TRAINSIM_ASSERT(participant >= 0 && participant < static_cast<int>(done_.size()),
                  "unknown participant");
  TRAINSIM_ASSERT(!done_[participant], "participant joined twice");
  done_[participant] = std::move(done);
  if (++joined_ < static_cast<int>(done_.size())) return;
  sim_.schedule_in(duration_, [this] {
    for (auto& d : done_) d();
  });
}

}  // namespace trainsim::models
