// Reader for nccl-tests output logs. Accepts the variants found in the wild: with or without a
// `root` column, `#wrong` or the older `error` column, N/A fields, in-place columns, MPI launcher
// prefixes such as "[1,0]<stdout>:", and several collectives in one file. A line that looks like
// data but does not parse is an error naming the file and line, never a guess.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/spec/collective_op.h"

namespace trainsim::models {

struct NcclTestsRow {
  int line = 0;
  long long size_bytes = 0;
  long long count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  // Out-of-place and in-place figures; NaN where the log says N/A or has no in-place columns.
  double time_us = 0.0;
  double algbw_gb_per_s = 0.0;
  double busbw_gb_per_s = 0.0;
  double in_place_time_us = 0.0;
  double in_place_algbw_gb_per_s = 0.0;
  double in_place_busbw_gb_per_s = 0.0;
};

struct NcclTestsRun {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int first_line = 0;
  int ranks = 0;                    // "# Rank N ..." lines of the run (0 if the log lists none)
  std::vector<std::string> hosts;   // distinct hosts of those ranks, in order of appearance
  std::string gpu;                  // device name of rank 0, if listed
  double avg_busbw_gb_per_s = 0.0;  // the "Avg bus bandwidth" footer (0 if absent)
  std::vector<NcclTestsRow> rows;

  int nodes() const { return hosts.empty() ? 1 : static_cast<int>(hosts.size()); }
};

struct NcclTestsLog {
  std::string file;
  std::vector<std::string> provenance;  // leading "# SOURCE:", "# PATH:", "# NOTE:" lines
  std::string nccl_version;             // e.g. "nccl-library=22902", if printed
  int gpus_per_thread = 0;              // "nThread 1 nGpus 8 ...": GPUs per thread (0: not printed)
  std::vector<NcclTestsRun> runs;
};

// Throws ConfigError (file, line, message) for unreadable files, malformed data lines, unknown
// collective names and logs without data rows. A table's collective comes from its 'Collective
// test starting' line or the command before it; else from `op`; else from a command the log's
// provenance lines quote (# NOTE: ... all_reduce_perf ...).
NcclTestsLog read_nccl_tests_log(const std::string& path, std::optional<CollectiveOp> op = {});
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& name,
                                  std::optional<CollectiveOp> op = {});

}  // namespace trainsim::models
