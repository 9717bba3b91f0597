// Loaders for the sections that go beyond the training step (configs/README.md): a cluster's
// storage, host and reliability; a model's dataset and convergence; a job's dataloader and
// checkpoint.
#pragma once

#include "models/config/config_node.h"
#include "models/runtime/runtime_spec.h"

namespace trainsim::models {

StorageSpec parse_storage(const ConfigNode& node);
HostSpec parse_host(const ConfigNode& node);
ReliabilitySpec parse_reliability(const ConfigNode& node);
DatasetSpec parse_dataset(const ConfigNode& node);
ConvergenceSpec parse_convergence(const ConfigNode& node);
DataloaderSpec parse_dataloader(const ConfigNode& node);
CheckpointSpec parse_checkpoint(const ConfigNode& node);

}  // namespace trainsim::models
