// Must not compile: models/workload runs steps from plain specs and may not read YAML (the config
// layer sits beside it, not below). Built with models/workload's include root by the ctest
// layering_rejects_upward_include; the compiler must stop at the #include.
#include "models/config/job_config.h"
