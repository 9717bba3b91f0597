// Collective operations and the size conventions of nccl-tests (doc/PERFORMANCE.md): what `size`
// means per operation, how many elements that is, and the bus-bandwidth factor that turns algbw
// (size / time) into busbw, comparable across operations and rank counts.
#pragma once

#include <optional>
#include <string_view>

#include "models/spec/enum_names.h"

namespace trainsim::models {

enum class CollectiveOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv,
};

// "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv".
const EnumNames<CollectiveOp>& collective_names();
std::string_view collective_name(CollectiveOp op);
// Accepts the names above and the nccl-tests binary names ("all_reduce_perf", ...).
std::optional<CollectiveOp> parse_collective(std::string_view name);

// busbw = algbw x factor, for n ranks: 2(n-1)/n for all-reduce; (n-1)/n for all-gather,
// reduce-scatter and all-to-all; 1 for broadcast, reduce and send/recv.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

// nccl-tests' `size` is the larger of the send and receive buffer of one rank (the whole gathered
// buffer for all-gather and reduce-scatter, the whole send buffer for all-to-all). These give the
// element count it prints, for elements of `type_bytes` each: size / type_bytes, except that
// all-gather and reduce-scatter print the per-rank count and all-to-all the per-peer count
// (size / type_bytes / n).
long long nccl_tests_count(CollectiveOp op, long long size_bytes, int type_bytes, int ranks);

// nccl-tests rounds each size down so the per-rank count divides evenly: to a multiple of
// n x type_bytes for all-gather, reduce-scatter and all-to-all, of type_bytes otherwise.
long long nccl_tests_size(CollectiveOp op, long long requested_bytes, int type_bytes, int ranks);

// Whether nccl-tests prints a reduction operator ("sum") and a root for the operation
// (sendrecv prints one too).
bool has_reduction(CollectiveOp op);
bool has_root(CollectiveOp op);

}  // namespace trainsim::models
