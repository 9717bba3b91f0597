// Must not compile: models/spec is the lowest model layer and may not include a layer above it
// (here the collectives). The ctest layering_rejects_upward_include builds this file with the
// include root models/spec's own sources get, and expects the compiler to stop at the #include.
#include "models/collectives/algorithms.h"
