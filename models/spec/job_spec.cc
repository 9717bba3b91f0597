#include "models/spec/job_spec.h"

#include <algorithm>

namespace trainsim::models {

int ShardingGroup::size(int world, int gpus_per_node) const {
  switch (kind) {
    case Kind::kWorld:
      return world;
    case Kind::kNode:
      return std::min(gpus_per_node, world);
    case Kind::kGpus:
      return gpus;
  }
  return world;
}

double job_batch_per_gpu(const JobSpec& job, int gpus) {
  return job.batch_per_gpu ? *job.batch_per_gpu : *job.global_batch / gpus;
}

}  // namespace trainsim::models
