// The nccl-tests log reader on every shared log, on the format variants older builds and MPI
// launchers produce, and on broken input.
#include "models/collectives/nccl_tests_log.h"

#include <cmath>

#include <gtest/gtest.h>

#include "models/spec/config_error.h"

namespace trainsim::models {
namespace {

const std::string kLogs = std::string(TRAINSIM_SOURCE_DIR) + "/validation/nccl-tests/";

TEST(NcclTestsLogTest, ReadsEveryCollectiveOfAMultiNodeLog) {
  const NcclTestsLog log =
      read_nccl_tests_log(kLogs + "h100_10nodes_x1gpu_10ranks_nccl2.29.2_allcolls_xxrjun.log");
  ASSERT_EQ(log.runs.size(), 5u);
  const CollectiveOp expected[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                                   CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll,
                                   CollectiveOp::kSendRecv};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(log.runs[i].op, expected[i]);
    EXPECT_EQ(log.runs[i].ranks, 10);
    EXPECT_EQ(log.runs[i].nodes(), 10);
    EXPECT_EQ(log.runs[i].rows.size(), 10u);  // 32 MiB .. 16 GiB
  }
  const NcclTestsRow& first = log.runs[0].rows[0];
  EXPECT_EQ(first.size_bytes, 33554432);
  EXPECT_EQ(first.count, 4194304);
  EXPECT_EQ(first.type, "double");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_EQ(first.root, -1);
  EXPECT_DOUBLE_EQ(first.time_us, 1405.25);
  EXPECT_DOUBLE_EQ(first.busbw_gb_per_s, 42.98);
  EXPECT_DOUBLE_EQ(first.in_place_busbw_gb_per_s, 42.95);
  EXPECT_DOUBLE_EQ(log.runs[0].avg_busbw_gb_per_s, 47.8165);
  EXPECT_EQ(log.runs[0].gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.provenance.size(), 3u);
  EXPECT_EQ(log.provenance[0].rfind("# SOURCE:", 0), 0u);
}

TEST(NcclTestsLogTest, EveryRowOfEverySharedLogFollowsTheBusBandwidthConvention) {
  // algbw = size / time (GB = 1e9 B) and busbw = algbw x factor(op, ranks), to the two decimals
  // nccl-tests prints: a check that operation and rank count were read right.
  const char* files[] = {"a100x8_1node_allreduce_fullsweep_oci_bmgpu4.8.log",
                         "h100_10nodes_x1gpu_10ranks_nccl2.29.2_allcolls_xxrjun.log",
                         "h100_2nodes_x8gpu_16ranks_alltoall_sendrecv_nccl2.29.2_xxrjun.log",
                         "h100x8_1node_allreduce_NVLS_nccl2.26.2_together.log",
                         "h100x8_1node_allreduce_RING_nccl2.26.2_together.log",
                         "h100x8_1node_nccl2.29.2_allcolls_xxrjun.log"};
  int rows = 0;
  for (const char* file : files) {
    const NcclTestsLog log = read_nccl_tests_log(kLogs + file);
    for (const NcclTestsRun& run : log.runs) {
      ASSERT_GT(run.ranks, 0) << file;
      for (const NcclTestsRow& row : run.rows) {
        const double algbw = row.size_bytes / (row.time_us * 1e3);
        EXPECT_NEAR(row.algbw_gb_per_s, algbw, 0.006 + 0.001 * algbw) << file << ":" << row.line;
        const double busbw = algbw * bus_bandwidth_factor(run.op, run.ranks);
        EXPECT_NEAR(row.busbw_gb_per_s, busbw, 0.006 + 0.001 * busbw) << file << ":" << row.line;
        ++rows;
      }
    }
  }
  EXPECT_EQ(rows, 28 + 50 + 6 + 31 + 31 + 50);
}

TEST(NcclTestsLogTest, TopologyOfTheRunComesFromTheDeviceList) {
  const NcclTestsLog two = read_nccl_tests_log(
      kLogs + "h100_2nodes_x8gpu_16ranks_alltoall_sendrecv_nccl2.29.2_xxrjun.log");
  ASSERT_EQ(two.runs.size(), 2u);
  EXPECT_EQ(two.runs[0].ranks, 16);
  EXPECT_EQ(two.runs[0].nodes(), 2);
  EXPECT_TRUE(std::isnan(two.runs[1].rows[0].in_place_busbw_gb_per_s) == false);
  const NcclTestsLog a100 =
      read_nccl_tests_log(kLogs + "a100x8_1node_allreduce_fullsweep_oci_bmgpu4.8.log");
  ASSERT_EQ(a100.runs.size(), 1u);  // named by the "> ./build/all_reduce_perf" command line
  EXPECT_EQ(a100.runs[0].op, CollectiveOp::kAllReduce);
  EXPECT_EQ(a100.runs[0].ranks, 8);
  EXPECT_EQ(a100.runs[0].nodes(), 1);
  EXPECT_EQ(a100.runs[0].rows.front().size_bytes, 64);
}

// The format of older nccl-tests builds (no root column, an `error` column), behind an MPI
// launcher's line prefixes, with N/A fields. Rows are the first two of the H100 ring log rewritten.
const std::string kOldFormat =
    R"([1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#   Rank  0 Pid  11 on     node-a device  0 [0x1b] Tesla V100
[1,0]<stdout>:#   Rank  1 Pid  12 on     node-b device  0 [0x1b] Tesla V100
[1,0]<stdout>:#
[1,0]<stdout>:#                                                     out-of-place                       in-place
[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
[1,0]<stdout>:#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:           8             2   float     sum    37.33    0.00    0.00  0e+00    37.79    0.00    0.00    N/A
[1,0]<stdout>:          16             4   float     sum    34.96    0.00    0.00  0e+00      N/A     N/A     N/A    N/A
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 0.001
)";

TEST(NcclTestsLogTest, AcceptsOldFormatWithLauncherPrefixesAndNA) {
  // Without any name in the text the collective is unknown; with a command line it is read.
  EXPECT_THROW(parse_nccl_tests_log(kOldFormat, "old.log"), ConfigError);
  const NcclTestsLog log = parse_nccl_tests_log(
      "[1,0]<stdout>:> mpirun ./build/all_reduce_perf -b 8 -e 16\n" + kOldFormat, "old.log");
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclTestsRun& run = log.runs[0];
  EXPECT_EQ(run.op, CollectiveOp::kAllReduce);
  ASSERT_EQ(run.rows.size(), 2u);
  EXPECT_EQ(run.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(run.rows[0].time_us, 37.33);
  EXPECT_DOUBLE_EQ(run.rows[0].in_place_time_us, 37.79);
  EXPECT_TRUE(std::isnan(run.rows[1].in_place_time_us));
  EXPECT_DOUBLE_EQ(run.avg_busbw_gb_per_s, 0.001);
}

std::string error_of(const std::string& text) {
  try {
    parse_nccl_tests_log(text, "bad.log");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

const std::string kHeader =
    "# Collective test starting: all_reduce_perf\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time "
    "  algbw   busbw #wrong\n";

TEST(NcclTestsLogTest, RejectsALogWithoutDataRows) {
  EXPECT_NE(error_of(kHeader + "# Avg bus bandwidth : 0\n").find("bad.log: no data rows"),
            std::string::npos);
}

TEST(NcclTestsLogTest, RejectsAnUnknownCollective) {
  EXPECT_NE(error_of("# Collective test starting: hypercube_perf\n")
                .find("bad.log:1:1: unknown collective 'hypercube_perf'"),
            std::string::npos);
}

TEST(NcclTestsLogTest, RejectsASizeThatIsNotANumber) {
  const std::string text =
      kHeader +
      "  1048576  262144  float  sum  -1  41.45  25.30  44.27  0  42.10  24.90  43.58  0\n" +
      "  2097x52  524288  float  sum  -1  43.34  48.39  84.67  0  43.50  48.21  84.36  0\n";
  EXPECT_NE(error_of(text).find("bad.log:4:1: the size column is not a whole number: '2097x52'"),
            std::string::npos);
}

TEST(NcclTestsLogTest, RejectsRowsWithMissingColumns) {
  const std::string text = kHeader + "  1048576  262144  float  sum  -1  41.45  25.30\n";
  EXPECT_NE(error_of(text).find("bad.log:3:1: expected 13 columns, found 7"), std::string::npos);
}

TEST(NcclTestsLogTest, RejectsDataBeforeAHeader) {
  EXPECT_NE(error_of("1048576 262144 float sum -1 41.45 25.30 44.27 0\n")
                .find("bad.log:1:1: data row before"),
            std::string::npos);
}

TEST(NcclTestsLogTest, CollectiveNamesAndBusFactors) {
  EXPECT_EQ(parse_collective("all_reduce_perf"), CollectiveOp::kAllReduce);
  EXPECT_EQ(parse_collective("alltoall"), CollectiveOp::kAllToAll);
  EXPECT_FALSE(parse_collective("hypercube_perf"));
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllGather, 10), 0.9);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kSendRecv, 16), 1.0);
  // nccl-tests rounds alltoall sizes to a multiple of n x type size: 32 MiB over 10 ranks of
  // doubles gives 33554400 bytes, and prints the count per peer, 419430 (as the 10-node log
  // does); all-gather prints the per-rank count; sendrecv the whole buffer, 4194304 doubles.
  EXPECT_EQ(nccl_tests_size(CollectiveOp::kAllToAll, 33554432, 8, 10), 33554400);
  EXPECT_EQ(nccl_tests_count(CollectiveOp::kAllToAll, 33554400, 8, 10), 419430);
  EXPECT_EQ(nccl_tests_count(CollectiveOp::kAllGather, 33554400, 8, 10), 419430);
  EXPECT_EQ(nccl_tests_count(CollectiveOp::kSendRecv, 33554432, 8, 10), 4194304);
  EXPECT_TRUE(has_reduction(CollectiveOp::kSendRecv));  // it prints "sum"
  EXPECT_FALSE(has_reduction(CollectiveOp::kAllToAll));
}

}  // namespace
}  // namespace trainsim::models
