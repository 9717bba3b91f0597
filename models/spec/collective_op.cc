#include "models/spec/collective_op.h"

#include <string>

namespace trainsim::models {

const EnumNames<CollectiveOp>& collective_names() {
  // After the names: spellings without underscores (nccl-tests' binaries drop them too).
  static const EnumNames<CollectiveOp> names = {{CollectiveOp::kAllReduce, "all_reduce"},
                                                {CollectiveOp::kAllGather, "all_gather"},
                                                {CollectiveOp::kReduceScatter, "reduce_scatter"},
                                                {CollectiveOp::kAllToAll, "alltoall"},
                                                {CollectiveOp::kBroadcast, "broadcast"},
                                                {CollectiveOp::kReduce, "reduce"},
                                                {CollectiveOp::kSendRecv, "sendrecv"},
                                                {CollectiveOp::kAllReduce, "allreduce"},
                                                {CollectiveOp::kAllGather, "allgather"},
                                                {CollectiveOp::kReduceScatter, "reducescatter"},
                                                {CollectiveOp::kAllToAll, "all_to_all"}};
  return names;
}

std::string_view collective_name(CollectiveOp op) { return collective_names().name(op); }

std::optional<CollectiveOp> parse_collective(std::string_view name) {
  constexpr std::string_view kSuffix = "_perf";
  if (name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix) {
    name.remove_suffix(kSuffix.size());
  }
  return collective_names().parse(name);
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

long long nccl_tests_count(CollectiveOp op, long long size_bytes, int type_bytes, int ranks) {
  const long long elements = size_bytes / type_bytes;
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
      op == CollectiveOp::kAllToAll) {
    return elements / ranks;
  }
  return elements;
}

long long nccl_tests_size(CollectiveOp op, long long requested_bytes, int type_bytes, int ranks) {
  long long unit = type_bytes;
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter ||
      op == CollectiveOp::kAllToAll) {
    unit *= ranks;
  }
  return requested_bytes / unit * unit;
}

bool has_reduction(CollectiveOp op) {
  // sendrecv_perf labels its rows with the operator too, though it reduces nothing.
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter ||
         op == CollectiveOp::kReduce || op == CollectiveOp::kSendRecv;
}

bool has_root(CollectiveOp op) {
  return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
}

}  // namespace trainsim::models
