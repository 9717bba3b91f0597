#include "models/runtime/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace trainsim::models {

double young_interval(double checkpoint_seconds, double mtbf_seconds) {
  return std::sqrt(2.0 * checkpoint_seconds * mtbf_seconds);
}

double daly_interval(double checkpoint_seconds, double mtbf_seconds) {
  const double delta = checkpoint_seconds;
  const double m = mtbf_seconds;
  if (delta >= 2.0 * m) return m;
  const double x = delta / (2.0 * m);
  return std::sqrt(2.0 * delta * m) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta;
}

double daly_wall_time_ratio(double interval_seconds, double checkpoint_seconds,
                            double restart_seconds, double mtbf_seconds) {
  const double tau = interval_seconds;
  if (tau <= 0.0) {
    // Checkpointing continuously: free only when a checkpoint costs nothing; then a failure
    // costs only the restart.
    if (checkpoint_seconds > 0.0) return std::numeric_limits<double>::infinity();
    return mtbf_seconds > 0.0 ? std::exp(restart_seconds / mtbf_seconds) : 1.0;
  }
  if (mtbf_seconds <= 0.0) return (tau + checkpoint_seconds) / tau;
  const double m = mtbf_seconds;
  // expm1 keeps precision when the interval is tiny against the MTBF.
  return m * std::exp(restart_seconds / m) * std::expm1((tau + checkpoint_seconds) / m) / tau;
}

namespace {

// Aggregate bandwidth of `nodes` nodes each limited to `per_node`, all sharing `shared` (0: none).
double aggregate_bandwidth(double per_node, double shared, int nodes) {
  const double total = per_node * nodes;
  return shared > 0.0 ? std::min(total, shared) : total;
}

}  // namespace

CheckpointCost checkpoint_cost(const CheckpointInputs& in) {
  CheckpointCost c;
  if (!in.checkpoint.configured) return c;
  const StorageSpec& s = in.storage;
  if (s.write_bytes_per_s_per_node <= 0.0) {
    throw ConfigError(in.checkpoint.location,
                      "checkpoints need the cluster's storage.write_bandwidth_per_node" +
                          std::string(s.location.file.empty() ? "" : " (" + s.location.file + ")"));
  }
  c.bytes = in.checkpoint.bytes ? *in.checkpoint.bytes : in.model_bytes;
  c.write_seconds = c.bytes / aggregate_bandwidth(s.write_bytes_per_s_per_node,
                                                  s.shared_write_bytes_per_s, in.nodes);
  // Each GPU copies its share of the state to host memory first (sharded checkpointing).
  const double copy_seconds =
      in.device_to_host_bytes_per_s > 0.0 ? c.bytes / in.gpus / in.device_to_host_bytes_per_s : 0.0;
  c.pause_seconds = in.checkpoint.async ? copy_seconds : copy_seconds + c.write_seconds;
  const double read_per_node = s.read_bytes_per_s_per_node > 0.0 ? s.read_bytes_per_s_per_node
                                                                 : s.write_bytes_per_s_per_node;
  const double shared_read =
      s.read_bytes_per_s_per_node > 0.0 ? s.shared_read_bytes_per_s : s.shared_write_bytes_per_s;
  c.restore_seconds = in.reliability.restart_seconds +
                      c.bytes / aggregate_bandwidth(read_per_node, shared_read, in.nodes);
  if (in.reliability.node_mtbf_seconds > 0.0) {
    c.cluster_mtbf_seconds = in.reliability.node_mtbf_seconds / in.nodes;
  }
  if (in.checkpoint.interval_seconds) {
    c.interval_seconds = *in.checkpoint.interval_seconds;
  } else {
    if (c.cluster_mtbf_seconds <= 0.0) {
      throw ConfigError(in.checkpoint.location,
                        "interval: optimal needs the cluster's reliability.node_mtbf" +
                            std::string(in.reliability.location.file.empty()
                                            ? ""
                                            : " (" + in.reliability.location.file + ")") +
                            "; or give the interval as a time");
    }
    c.interval_seconds = daly_interval(c.pause_seconds, c.cluster_mtbf_seconds);
    c.optimal_interval = true;
  }
  // An asynchronous write must finish before the next checkpoint starts, and a failure during the
  // write loses it: the work since the previous checkpoint is lost as well (restart later by the
  // write time).
  double restart = c.restore_seconds;
  if (in.checkpoint.async) {
    c.interval_seconds = std::max(c.interval_seconds, c.write_seconds);
    restart += c.write_seconds;
  }
  c.overhead =
      daly_wall_time_ratio(c.interval_seconds, c.pause_seconds, restart, c.cluster_mtbf_seconds) -
      1.0;
  if (!(c.overhead < 1e6)) {
    std::ostringstream why;
    why << "the job would practically never finish: checkpoints every " << c.interval_seconds
        << " s with a cluster MTBF of " << c.cluster_mtbf_seconds
        << " s lose nearly all work to failures; checkpoint more often";
    throw ConfigError(in.checkpoint.location, why.str());
  }
  return c;
}

}  // namespace trainsim::models
