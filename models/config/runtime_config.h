// Loaders for the sections that go beyond the training step (configs/README.md): a cluster's
// storage, host and reliability; a model's dataset and convergence; a job's dataloader and
// checkpoint.
#pragma once

#include "models/spec/runtime_spec.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode;  // models/config/config_node.h (YAML stays inside models/config)

StorageSpec parse_storage(const ConfigNode& node);
HostSpec parse_host(const ConfigNode& node);
ReliabilitySpec parse_reliability(const ConfigNode& node);
DatasetSpec parse_dataset(const ConfigNode& node);
ConvergenceSpec parse_convergence(const ConfigNode& node);
DataloaderSpec parse_dataloader(const ConfigNode& node);
CheckpointSpec parse_checkpoint(const ConfigNode& node);

}  // namespace trainsim::models
