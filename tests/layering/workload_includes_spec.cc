// Must compile: the same include root as workload_includes_config.cc reaches the layers below
// models/workload (the control that shows the other probes fail for their #include alone).
#include "models/collectives/algorithms.h"
#include "models/sharding/sharding_plan.h"
#include "models/spec/job_spec.h"
#include "models/workload/recsys_training.h"
