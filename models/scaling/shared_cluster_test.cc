// Two jobs on one oversubscribed fat tree, worked by hand.
#include "models/scaling/shared_cluster.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/collectives/nccl_tuner.h"
#include "models/spec/test_fixtures.h"

namespace trainsim::models {
namespace {

// Six nodes of one GPU and one 1 GB/s NIC, two nodes per leaf (leaf0: nodes 0-1, leaf1: 2-3,
// leaf2: 4-5), one spine, oversubscription 2: each leaf's uplink to the spine carries
// 2 x 1 GB/s / 2 = 1 GB/s per direction. No wire latency, and NCCL's per-hop latencies off
// (its base latency stays).
ClusterSpec fat_tree() {
  ClusterSpec c = testing::small_node(1);
  c.name = "fat tree";
  c.nodes = 6;
  c.gpu.architecture = GpuArch::kHopper;
  c.nic.count = 1;
  c.nic.link = LinkClassSpec{1e9, 0, 1.0};
  c.nic.gpu_link = LinkClassSpec{1e15, 0, 1.0};
  c.nic.gpus = {{0}};
  c.network.topology = NetworkTopology::kFatTree;
  c.network.nodes_per_leaf = 2;
  c.network.spines = 1;
  c.network.oversubscription = 2.0;
  c.collectives.nvlink_latency_scale = 0;
  c.collectives.pcie_latency_scale = 0;
  c.collectives.network_latency_scale = 0;
  return c;
}

// 100 examples of 1 GFLOP at 50 TFLOP/s: 2 ms of compute (forward and backward), then one ring
// all-reduce of `bytes` (no overlap).
ModelSpec model(double bytes) { return testing::small_dense_model(bytes); }

// Job `name` training model(bytes) on nodes [first, first + nodes), started at `start`.
PlacedJob placed(const std::string& name, int first, int nodes, Time start = 0,
                 double bytes = 100e6) {
  PlacedJob j;
  j.name = name;
  j.workload = Workload{model(bytes), std::nullopt};
  j.first_node = first;
  j.nodes = nodes;
  j.start = start;
  return j;
}

// NCCL's base latency of a Simple ring all-reduce of `bytes` over two nodes (hop latencies off).
Time base_latency(const ClusterSpec& c, double bytes) {
  const NcclComm comm = make_nccl_comm(c, 2);
  return time_from_seconds(1e-6 * nccl_latency_us(comm, CollectiveOp::kAllReduce, Algorithm::kRing,
                                                  Protocol::kSimple, bytes,
                                                  HopLatencyScales{0, 0, 0, 1, 1}));
}

TEST(SharedClusterTest, TwoJobsHalveTheSpineLinkTheyShare) {
  // Job a on nodes 1-2 (leaf0 and leaf1), job b on nodes 3-4 (leaf1 and leaf2). A two-rank ring
  // all-reduce of S sends S/2 each way twice; a's node 2 -> node 1 and b's node 3 -> node 4 both
  // climb leaf1 -> spine0, and a's node 1 -> node 2 and b's node 4 -> node 3 both come down
  // spine0 -> leaf1. Alone, each transfer has the 1 GB/s of its NICs: S / 1 GB/s. Together, the
  // two jobs' flows on those 1 GB/s links get 0.5 GB/s each (max-min), so the all-reduce takes
  // 2 S / 1 GB/s: S = 100 MB adds 100 ms to each step.
  const double bytes = 100e6;
  Placement p;
  p.cluster = fat_tree();
  p.jobs = {placed("a", 1, 2, 0), placed("b", 3, 2, 0)};
  StepSimulationOptions options;
  const SharedClusterResult r = run_shared_cluster(p, options);
  ASSERT_EQ(r.jobs.size(), 2u);
  const Time compute = 2 * kMillisecond;
  const Time transfer = 100 * kMillisecond;  // S / 1 GB/s
  const Time alone = compute + base_latency(p.cluster, bytes) + transfer;
  for (const SharedJobResult& j : r.jobs) {
    EXPECT_EQ(j.gpus, 2);
    EXPECT_DOUBLE_EQ(j.global_batch, 200);
    EXPECT_NEAR(j.alone.step_time, alone, 10) << j.name;
    EXPECT_NEAR(j.shared.step_time, alone + transfer, 10) << j.name;
    EXPECT_NEAR(j.slowdown, 1.0 + 100.0 / to_milliseconds(alone), 1e-6) << j.name;
    EXPECT_NEAR(j.throughput_alone, 200 / to_seconds(alone), 1e-6) << j.name;
    EXPECT_NEAR(j.throughput_shared, 200 / to_seconds(alone + transfer), 1e-6) << j.name;
    EXPECT_EQ(j.shared.breakdown.compute, compute) << j.name;
  }
  // Global ranks (every GPU computes as long: the first of each job's): a's GPUs are 1 and 2, b's
  // 3 and 4.
  EXPECT_EQ(r.jobs[0].shared.slowest_rank, 1);
  EXPECT_EQ(r.jobs[1].shared.slowest_rank, 3);
  // They collide on leaf1's uplink, both ways, while their all-reduces run: three steps (one of
  // warm-up, two measured) of 2 S / 1 GB/s each; nowhere else.
  ASSERT_EQ(r.collisions.size(), 2u);
  std::set<std::string> links;
  for (const LinkCollision& c : r.collisions) {
    links.insert(c.link);
    EXPECT_EQ(c.label, "leaf-spine");
    EXPECT_EQ(c.owners, (std::vector<std::string>{"a", "b"}));
    EXPECT_NEAR(to_milliseconds(c.shared), 3 * 2 * to_milliseconds(transfer), 0.01) << c.link;
  }
  EXPECT_EQ(links, (std::set<std::string>{"leaf1 -> spine0", "spine0 -> leaf1"}));
  EXPECT_EQ(r.window_start, 0);
  EXPECT_NEAR(r.window_end, 3 * (alone + transfer), 30);
}

TEST(SharedClusterTest, JobsOnSeparateLeavesRunAsAlone) {
  // a on leaf0 (nodes 0-1), b on leaf2 (nodes 4-5): their rings never leave their leaves.
  Placement p;
  p.cluster = fat_tree();
  p.jobs = {placed("a", 0, 2, 0), placed("b", 4, 2, 0)};
  const SharedClusterResult r = run_shared_cluster(p, {});
  for (const SharedJobResult& j : r.jobs) {
    EXPECT_EQ(j.shared.step_time, j.alone.step_time) << j.name;
    EXPECT_DOUBLE_EQ(j.slowdown, 1.0) << j.name;
  }
  EXPECT_TRUE(r.collisions.empty());
}

TEST(SharedClusterTest, ALaterJobIsMeasuredWhileBothRun) {
  // b starts 250 ms after a, a little over two of a's alone steps (102 ms each): a's measured
  // steps must begin after that, so both see each other's traffic and each slows as above.
  Placement p;
  p.cluster = fat_tree();
  p.jobs = {placed("a", 1, 2, 0), placed("b", 3, 2, 250 * kMillisecond)};
  const SharedClusterResult r = run_shared_cluster(p, {});
  EXPECT_EQ(r.window_start, 250 * kMillisecond);
  // a needs its warm-up step and then three more alone-length steps (102 ms each) to get past
  // 250 ms: its measured steps begin at 4 x 102 ms at the earliest.
  EXPECT_GE(r.jobs[0].measured_from, 4 * r.jobs[0].alone.step_time);
  EXPECT_GE(r.jobs[1].measured_from, 250 * kMillisecond + r.jobs[1].alone.step_time);
  for (const SharedJobResult& j : r.jobs) {
    // The all-reduces of a and b do not start together any more, but each overlaps the other's
    // for most of its length: every step is slower than alone, by at most S / 1 GB/s.
    EXPECT_GT(j.slowdown, 1.5) << j.name;
    EXPECT_LE(j.shared.step_time, j.alone.step_time + 100 * kMillisecond + 10) << j.name;
  }
}

TEST(SharedClusterTest, BackgroundTrafficIsOneMoreOwner) {
  // 1 GB/s from node 2 to node 5 (leaf1 -> spine0 -> leaf2), beside job a on nodes 1-2: max-min
  // gives a's flow out of node 2 and the background 0.5 GB/s each on node 2's NIC and on leaf1's
  // uplink.
  Placement p;
  p.cluster = fat_tree();
  p.jobs = {placed("a", 1, 2, 0)};
  p.background = {{2, 2, 5, 5, 1e9}};
  const SharedClusterResult r = run_shared_cluster(p, {});
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_TRUE(r.background);
  // Node 2's sends (S/2 twice) take twice as long, node 1's do not, and each ring step waits for
  // the slower direction: the all-reduce takes 2 S / 1 GB/s as with the other job.
  EXPECT_NEAR(r.jobs[0].shared.step_time, r.jobs[0].alone.step_time + 100 * kMillisecond, 10);
  bool background_met = false;
  for (const LinkCollision& c : r.collisions) {
    if (c.link == "leaf1 -> spine0") {
      background_met = true;
      EXPECT_EQ(c.owners, (std::vector<std::string>{"a", "background"}));
    }
  }
  EXPECT_TRUE(background_met);
}

TEST(SharedClusterTest, JobsTooFarApartAreAnErrorAtTheStart) {
  // b starts an hour after a, whose steps take 102 ms: a would run 35,000 steps first.
  Placement p;
  p.cluster = fat_tree();
  p.jobs = {placed("a", 1, 2, 0), placed("b", 3, 2, 3600 * kSecond)};
  p.jobs[1].start_location = {"placement.yaml", 9, 12, "jobs[1].start"};
  try {
    run_shared_cluster(p, {});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 9);
    EXPECT_NE(e.message().find("more than 10000 steps"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

TEST(SharedClusterTest, AutoQuantumIsExactWithRoomAndGoesOnUnderItsQuantumWithout) {
  // The later job above. Under a coarse quantum (10% of a's step) the shared steps move (flows
  // wait for the next solve for their share); "auto" with room for every rate change is the
  // exact run, alone and shared. With no room the shared run goes on under the quantum after its
  // first solve that changes a rate, so its steps move too, and it says from when; the alone
  // runs stay exact (each flow is alone on its links, rated as it starts, without a solve).
  Placement p;
  p.cluster = fat_tree();
  p.jobs = {placed("a", 1, 2, 0), placed("b", 3, 2, 250 * kMillisecond)};
  std::optional<Time> switched;
  auto steps = [&](SolveQuantum quantum) {
    StepSimulationOptions options;
    options.solve_quantum = quantum;
    const SharedClusterResult r = run_shared_cluster(p, options);
    EXPECT_FALSE(r.jobs[0].alone.quantum_from || r.jobs[1].alone.quantum_from);
    switched = r.quantum_from;
    return std::vector<Time>{r.jobs[0].alone.step_time, r.jobs[1].alone.step_time,
                             r.jobs[0].shared.step_time, r.jobs[1].shared.step_time};
  };
  const std::vector<Time> exact = steps(Time{0});
  const std::vector<Time> coarse = steps(StepShare{100'000});
  ASSERT_NE(coarse[2], exact[2]);
  EXPECT_EQ(steps(ExactOrShare{1'000'000'000, StepShare{100'000}}), exact);
  EXPECT_FALSE(switched.has_value());
  const std::vector<Time> none = steps(ExactOrShare{0, StepShare{100'000}});
  // (b starts at 250 ms: the jobs first meet, and a solve first changes a rate, after that.)
  ASSERT_TRUE(switched.has_value());
  EXPECT_GE(*switched, 250 * kMillisecond);
  EXPECT_EQ(none[0], exact[0]);
  EXPECT_EQ(none[1], exact[1]);
  EXPECT_NE(none[2], exact[2]);
  EXPECT_NE(none[3], exact[3]);
}

}  // namespace
}  // namespace trainsim::models
