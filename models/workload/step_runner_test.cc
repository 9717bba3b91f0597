// The communication stall's split by collective, and a runner on a shared fabric started late,
// worked by hand.
#include "models/workload/step_runner.h"

#include <limits>

#include <gtest/gtest.h>

#include "models/spec/test_fixtures.h"
#include "models/workload/test_expectations.h"

namespace trainsim::models {
namespace {

TEST(StepRunnerTest, ACollectivesExposedTimeIsWhatComputeDoesNotCover) {
  // Compute on [0, 10) and [15, 30); a transfer on [5, 40) is exposed on [10, 15) and [30, 40).
  const std::vector<std::pair<Time, Time>> compute = {{0, 10}, {15, 30}};
  EXPECT_EQ(time_not_covered(compute, 5, 40), 15);
  EXPECT_EQ(time_not_covered(compute, 0, 10), 0);
  EXPECT_EQ(time_not_covered(compute, 10, 15), 5);
  EXPECT_EQ(time_not_covered(compute, 31, 33), 2);
  EXPECT_EQ(time_not_covered({}, 3, 7), 4);
}

TEST(StepRunnerTest, TheStallSplitsInProportionAndAddsUp) {
  // 100 split 1 : 3 over two collectives (ids and dense): 25 and 75; 10 over 1 : 1 : 1 gives
  // 3, 3 and the remainder 4 to the last.
  std::array<Time, kStepCollectives> w{};
  w[static_cast<int>(StepCollective::kIdAllToAll)] = 1;
  w[static_cast<int>(StepCollective::kDenseAllReduce)] = 3;
  const auto parts = split_in_proportion(100, w);
  EXPECT_EQ(parts[static_cast<int>(StepCollective::kIdAllToAll)], 25);
  EXPECT_EQ(parts[static_cast<int>(StepCollective::kDenseAllReduce)], 75);
  EXPECT_EQ(parts[static_cast<int>(StepCollective::kGradientAllToAll)], 0);
  const auto thirds = split_in_proportion(10, {1, 1, 1, 0, 0});
  EXPECT_EQ(thirds[0], 3);
  EXPECT_EQ(thirds[1], 3);
  EXPECT_EQ(thirds[2], 4);
  EXPECT_EQ(split_in_proportion(10, {})[0], 0);  // nothing exposed to attribute
}

TEST(StepRunnerTest, ARunnerStartedLaterIsMeasuredFromItsStart) {
  // One GPU of small_node: a dense step of 2 ms of compute (small_dense_model), whose all-reduce
  // over one rank moves nothing. Started at 5 ms on a shared fabric, without warm-up: the first
  // step runs 5-7 ms, so the measurement starts at 5 ms and the step is the 2 ms it is alone,
  // not (9 ms - 0) / 2.
  const ClusterSpec cluster = testing::small_node(1);
  StepSimulationOptions options;
  options.steps = 2;
  options.warmup_steps = 0;
  options.trailing_steps = 1;
  const Time alone = 2 * kMillisecond;
  Fabric fabric(cluster, 1, 0, 0);
  StepRunner runner(fabric, cluster, 0, 1, options, false);
  EXPECT_EQ(runner.steps(), 3);  // two measured, one trailing
  add_dense_training(runner, testing::small_dense_model(1e6));
  Time measured_at = -1;
  runner.start(5 * kMillisecond, [&] {
    measured_at = fabric.sim().now();
    fabric.sim().stop();
  });
  fabric.sim().run();
  EXPECT_EQ(runner.measured_from(), 5 * kMillisecond);
  EXPECT_EQ(measured_at, 5 * kMillisecond + 2 * alone);
  // Stopped when the measured steps ended: the trailing step was still to run.
  EXPECT_FALSE(runner.ran_out());
  const StepSimulationResult r = runner.measure();
  EXPECT_EQ(r.step_time, alone);
  EXPECT_EQ(r.breakdown.compute, 2 * kMillisecond);
  // Left to run, it does its trailing step too, and has then run out.
  fabric.sim().run();
  EXPECT_TRUE(runner.ran_out());
}

TEST(StepRunnerTest, AllToAllsOfOneMatrixShareOnePlan) {
  // On one node of 4 GPUs, in either network model: the same matrix twice makes one plan; read
  // transposed, on one communicator per node, or another algorithm, it is another all-to-all;
  // an equal copy is another matrix (the runner compares addresses, not contents).
  const ClusterSpec cluster = testing::small_node(4);
  for (const NetworkModel network : {NetworkModel::kFlow, NetworkModel::kAnalytic}) {
    StepSimulationOptions options;
    options.network = network;
    StepRunner runner(cluster, 1, options, /*input_copies=*/false);
    std::vector<std::vector<double>> rows(4, std::vector<double>(4, 1e6));
    rows[0][1] = 3e6;
    const ByteMatrix m = ByteMatrix::from_rows(rows);
    const ByteMatrix copy = m;
    runner.all_to_all(m, Algorithm::kDirect);
    runner.all_to_all(m, Algorithm::kDirect);
    EXPECT_EQ(runner.all_to_all_plans(), 1u);
    runner.all_to_all(ByteMatrixView(m, /*transposed=*/true), Algorithm::kDirect);
    runner.all_to_all(ByteMatrixView(m, /*transposed=*/true), Algorithm::kDirect);
    EXPECT_EQ(runner.all_to_all_plans(), 2u);
    runner.all_to_all(m, Algorithm::kDirect, /*per_node=*/true);
    runner.all_to_all(m, Algorithm::kTwoD);
    EXPECT_EQ(runner.all_to_all_plans(), 4u);
    runner.all_to_all(copy, Algorithm::kDirect);
    EXPECT_EQ(runner.all_to_all_plans(), 5u);
  }
}

TEST(StepRunnerTest, AnEstimatesAllToAllPlansServeTheFlowRunThatSharesThem) {
  // The scaling study's estimate (analytic) and steps (flows) over one matrix, sharing their
  // plans: the estimate makes the plan and keeps it, the flow run makes none. Without sharing an
  // analytic runner keeps no plan, and a flow runner makes its own.
  const ClusterSpec cluster = testing::small_node(4);
  const ByteMatrix m =
      ByteMatrix::from_rows(std::vector<std::vector<double>>(4, std::vector<double>(4, 1e6)));
  StepSimulationOptions options;
  options.all_to_all_plans = std::make_shared<AllToAllPlans>();
  options.network = NetworkModel::kAnalytic;
  StepRunner estimate(cluster, 1, options, /*input_copies=*/false);
  estimate.all_to_all(m, Algorithm::kDirect);
  EXPECT_EQ(estimate.all_to_all_plans(), 1u);
  EXPECT_EQ(options.all_to_all_plans->plans.size(), 1u);
  options.network = NetworkModel::kFlow;
  StepRunner steps(cluster, 1, options, /*input_copies=*/false);
  steps.all_to_all(m, Algorithm::kDirect);
  steps.all_to_all(ByteMatrixView(m, /*transposed=*/true), Algorithm::kDirect);
  EXPECT_EQ(steps.all_to_all_plans(), 1u);  // only the transposed one is new
  EXPECT_EQ(options.all_to_all_plans->plans.size(), 2u);
  // Each plan keeps the routes of the first runner that looked them up (its own router here).
  for (const auto& [key, kept] : options.all_to_all_plans->plans) {
    ASSERT_TRUE(kept.routes && kept.router);
    EXPECT_EQ(kept.routes->size(), kept.plan->size());
  }
  options.all_to_all_plans.reset();
  StepRunner alone(cluster, 1, options, /*input_copies=*/false);
  alone.all_to_all(m, Algorithm::kDirect);
  EXPECT_EQ(alone.all_to_all_plans(), 1u);
}

TEST(StepRunnerTest, PlansBetweenTheSameGpusShareTheirRoutes) {
  // Three matrices on one node of 4 GPUs: the second moves other bytes between the same pairs
  // (a step's gradients go where its ids went), so its plan takes the first one's routes; the
  // third leaves GPU 0 -> 1 out, so its plan is routed on its own.
  const ClusterSpec cluster = testing::small_node(4);
  std::vector<std::vector<double>> rows(4, std::vector<double>(4, 1e6));
  const ByteMatrix ids = ByteMatrix::from_rows(rows);
  for (auto& row : rows) row.assign(4, 3e6);
  const ByteMatrix gradients = ByteMatrix::from_rows(rows);
  rows[0][1] = 0;
  const ByteMatrix fewer = ByteMatrix::from_rows(rows);
  StepSimulationOptions options;
  options.all_to_all_plans = std::make_shared<AllToAllPlans>();
  StepRunner runner(cluster, 1, options, /*input_copies=*/false);
  runner.all_to_all(ids, Algorithm::kDirect);
  runner.all_to_all(gradients, Algorithm::kDirect);
  runner.all_to_all(fewer, Algorithm::kDirect);
  auto kept = [&](const ByteMatrix& m) {
    return options.all_to_all_plans->plans.at({&m, false, Algorithm::kDirect, false});
  };
  ASSERT_TRUE(kept(ids).routes && kept(gradients).routes && kept(fewer).routes);
  EXPECT_NE(kept(ids).plan, kept(gradients).plan);
  EXPECT_EQ(kept(ids).routes, kept(gradients).routes);
  EXPECT_NE(kept(ids).routes, kept(fewer).routes);
  EXPECT_EQ(kept(fewer).routes->size(), kept(ids).routes->size() - 1);
}

TEST(StepRunnerTest, RunsSharingATopologyRouteOnceAndGiveTheSameSteps) {
  // A dense step on one node of 4 GPUs (2 ms of compute, a ring all-reduce of 100 MB), run on a
  // fabric of its own and then twice on one shared topology: the same step every time, and the
  // second shared run finds every route and tuner pick the first made.
  const ClusterSpec cluster = testing::small_node(4);
  const DenseModelSpec model = testing::small_dense_model(1e8);
  const StepSimulationResult alone = simulate_dense_training(cluster, model, 1, {});
  StepSimulationOptions options;
  options.shared_topology = std::make_shared<SharedTopology>(cluster, 1);
  const StepSimulationResult first = simulate_dense_training(cluster, model, 1, options);
  const std::size_t routes = options.shared_topology->router.route_count();
  const std::size_t picks = options.shared_topology->analytic.seconds_per_byte.size();
  EXPECT_GT(routes, 0u);
  EXPECT_TRUE(options.shared_topology->analytic.comm.has_value());
  const StepSimulationResult second = simulate_dense_training(cluster, model, 1, options);
  EXPECT_EQ(options.shared_topology->router.route_count(), routes);
  EXPECT_EQ(options.shared_topology->analytic.seconds_per_byte.size(), picks);
  EXPECT_EQ(first.step_time, alone.step_time);
  EXPECT_EQ(second.step_time, alone.step_time);
  EXPECT_GT(alone.step_time, 2 * kMillisecond);  // compute, then the exposed all-reduce
}

// `nodes` nodes of `gpus` GPUs sharing one NIC of 25 GB/s (1 us) each, on one switch.
ClusterSpec nodes_on_one_nic(int nodes, int gpus) {
  ClusterSpec cluster = testing::small_node(gpus);
  cluster.nodes = nodes;
  cluster.nic.count = 1;
  cluster.nic.link = LinkClassSpec{25e9, kMicrosecond, 1.0};
  cluster.nic.gpu_link = LinkClassSpec{1e15, 0, 1.0};
  cluster.nic.gpus = {{}};
  for (int g = 0; g < gpus; ++g) cluster.nic.gpus[0].push_back(g);
  cluster.network.topology = NetworkTopology::kSingleSwitch;
  return cluster;
}

// One step, no warm-up.
StepSimulationOptions one_step() {
  StepSimulationOptions options;
  options.steps = 1;
  options.warmup_steps = 0;
  return options;
}

// Every rank sends rank 0 1 MB (a shard's owner gets its ids).
ByteMatrix ids_to_rank_zero(int ranks) {
  std::vector<std::vector<double>> rows(ranks, std::vector<double>(ranks, 0.0));
  for (int r = 1; r < ranks; ++r) rows[r][0] = 1e6;
  return ByteMatrix::from_rows(rows);
}

// One step on `runner`'s simulated ranks: each computes (node 0's ranks `node_zero`, the others
// `others`), then joins the exchange of `bytes`.
void work_then_exchange(StepRunner& runner, const ByteMatrix& bytes, Time node_zero, Time others) {
  const int g = runner.topology().gpus_per_node;
  runner.begin_step(0);
  Collective* exchange = runner.all_to_all(bytes, Algorithm::kDirect);
  for (const int r : runner.simulated()) {
    const TaskId work = runner.compute("work", r, r < g ? node_zero : others);
    const TaskId joined = runner.join("exchange", r, exchange, r);
    runner.depend(work, joined);
    runner.depend(joined, runner.end_step("end", r));
  }
}

TEST(StepRunnerTest, ACounterpartFinishingApartFromItsRepresentativeBreaksTheSymmetry) {
  // Two nodes of 4 GPUs on one switch. Every rank sends 1 MB to every other, except that node
  // 1's GPU 0 sends 8 MB: node 1 does not do what node 0 does. Told otherwise, the runner joins
  // node 1's ranks with node 0's, sees rank 4 finish after rank 0 and stops: the job must then run
  // every rank (and does so without the claim).
  ClusterSpec cluster = nodes_on_one_nic(2, 4);
  // Channels without a throughput of their own: the NICs set the pace (rank 4's eight 8 MB
  // operations would otherwise share the few p2p channels of this communicator).
  cluster.collectives.p2p_channel_bandwidth = std::numeric_limits<double>::infinity();
  cluster.collectives.p2p_nvlink_channel_bandwidth = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> rows(8, std::vector<double>(8, 1e6));
  rows[4].assign(8, 8e6);
  const ByteMatrix bytes = ByteMatrix::from_rows(rows);
  StepSimulationOptions options = one_step();
  StepRunner claimed(cluster, 2, options, /*input_copies=*/false);
  ASSERT_TRUE(claimed.represent_nodes());
  EXPECT_EQ(claimed.simulated_ranks(), 4);
  auto build = [&bytes](StepRunner& runner) {
    work_then_exchange(runner, bytes, kMillisecond, kMillisecond);
  };
  build(claimed);
  claimed.run();
  EXPECT_TRUE(claimed.symmetry_broken());
  options.represent_nodes = false;
  StepRunner every_rank(cluster, 2, options, /*input_copies=*/false);
  EXPECT_FALSE(every_rank.represent_nodes());
  EXPECT_EQ(every_rank.simulated_ranks(), 8);
  build(every_rank);
  const StepSimulationResult r = every_rank.run();
  EXPECT_FALSE(every_rank.symmetry_broken());
  // Node 1's NIC (shared by its 4 GPUs) carries rank 4's four 8 MB messages to node 0 and the
  // other three ranks' twelve 1 MB ones, 44 MB at 25 GB/s (1.76 ms) after the 1 ms of work; node
  // 0's carries 16 MB the other way.
  EXPECT_GE(r.step_time, kMillisecond + transfer_time(44e6, 25e9));
  EXPECT_LT(r.step_time, kMillisecond + transfer_time(44e6, 25e9) + 100 * kMicrosecond);
}

TEST(StepRunnerTest, ClassesOfNodesStandForTheirNodesWeighedByTheirSize) {
  // Five nodes of 2 GPUs on one switch, a 25 GB/s NIC each. Node 0's ranks compute 3 ms, the
  // others' 1 ms; then every rank sends 1 MB to rank 0 (the ids to a shard's owner). Nodes
  // 1-4 do the same, but in the rings' node order node 1 follows node 0 and node 4 precedes it:
  // nodes 2 and 3 alone see the fabric alike, so node 2's ranks stand for node 3's too, 8 ranks
  // simulated of 10. By hand: the eight remote messages share node 0's NIC, 8 MB at 25 GB/s
  // (320 us) once the last rank joins at 3 ms; compute (2 x 3 + 8 x 1 ms) / 10 ranks; the eight
  // ranks of nodes 1-4 wait 2 ms each for node 0's, 16 ms / 10 ranks. Weighed by rank, not by
  // simulated rank, which would give (6 + 6) / 8 = 1.5 ms of compute.
  const ClusterSpec cluster = nodes_on_one_nic(5, 2);
  const ByteMatrix bytes = ids_to_rank_zero(10);
  StepRunner classes(cluster, 5, one_step(), /*input_copies=*/false);
  ASSERT_TRUE(classes.represent_nodes({0, 1, 1, 1, 1}));
  EXPECT_EQ(classes.simulated(), (std::vector<int>{0, 1, 2, 3, 4, 5, 8, 9}));
  EXPECT_FALSE(classes.simulates(6));
  work_then_exchange(classes, bytes, 3 * kMillisecond, kMillisecond);
  const StepSimulationResult r = classes.run();
  ASSERT_FALSE(classes.symmetry_broken());
  EXPECT_EQ(r.breakdown.compute, 14 * kMillisecond / 10);
  EXPECT_EQ(r.breakdown.imbalance, 16 * kMillisecond / 10);
  EXPECT_EQ(r.slowest_rank, 0);
  EXPECT_GE(r.step_time, 3 * kMillisecond + transfer_time(8e6, 25e9));
  // (plus the launch and per-hop latencies: 24 us)
  EXPECT_LT(r.step_time, 3 * kMillisecond + transfer_time(8e6, 25e9) + 50 * kMicrosecond);
  StepSimulationOptions whole = one_step();
  whole.represent_nodes = false;
  StepRunner every_rank(cluster, 5, whole, /*input_copies=*/false);
  work_then_exchange(every_rank, bytes, 3 * kMillisecond, kMillisecond);
  testing::expect_same_steps(r, every_rank.run());
}

TEST(StepRunnerTest, ABundleHeldAtOneMembersOwnLinkBreaksTheSymmetry) {
  // The five nodes above, nodes 2 and 3 one class. Their ranks send rank 0 1 MB each, which run
  // as bundles (rank 4's message with rank 6's, 5's with 7's), and each sends 4 MB to each rank
  // of the other node, flows of their own. Node 2's NIC then carries 6 flows (25 / 6 GB/s each)
  // and node 0's 4 (25 / 4): a bundle is held at a link of node 2 that node 3's member does not
  // cross, so the members need not move at one rate, and the run stops for one of every rank.
  // There node 2's NIC carries 2 x 1 + 4 x 4 = 18 MB after the 1 ms of work: 720 us at 25 GB/s.
  const ClusterSpec cluster = nodes_on_one_nic(5, 2);
  std::vector<std::vector<double>> rows(10, std::vector<double>(10, 0.0));
  for (const int r : {4, 5, 6, 7}) {
    rows[r][0] = 1e6;
    for (const int o : {4, 5, 6, 7}) {
      if (o / 2 != r / 2) rows[r][o] = 4e6;
    }
  }
  const ByteMatrix bytes = ByteMatrix::from_rows(rows);
  StepRunner classes(cluster, 5, one_step(), /*input_copies=*/false);
  ASSERT_TRUE(classes.represent_nodes({0, 1, 1, 1, 1}));
  EXPECT_EQ(classes.simulated(), (std::vector<int>{0, 1, 2, 3, 4, 5, 8, 9}));
  work_then_exchange(classes, bytes, kMillisecond, kMillisecond);
  classes.run();
  EXPECT_TRUE(classes.symmetry_broken());
  StepSimulationOptions whole = one_step();
  whole.represent_nodes = false;
  StepRunner every_rank(cluster, 5, whole, /*input_copies=*/false);
  work_then_exchange(every_rank, bytes, kMillisecond, kMillisecond);
  const StepSimulationResult r = every_rank.run();
  EXPECT_GE(r.step_time, kMillisecond + transfer_time(18e6, 25e9));
  EXPECT_LT(r.step_time, kMillisecond + transfer_time(18e6, 25e9) + 50 * kMicrosecond);
}

TEST(StepRunnerTest, ANodeOfAClassThatSeesTheFabricOtherwiseIsAClassOfItsOwn) {
  // Six nodes of 2 GPUs, 3 to a leaf switch, as above: node 0 holds the shard
  // and nodes 1-5 do the same. Seen from the fabric they do not: nodes 1 and 2 share node 0's
  // leaf, 3-5 reach it over the spine; node 1 follows node 0 in the rings' node order and node 5
  // precedes it. So node 1, node 2, node 5 and nodes 3-4 are four classes: 10 of the 12 ranks
  // run, and the results are the whole run's.
  ClusterSpec cluster = nodes_on_one_nic(6, 2);
  cluster.network.topology = NetworkTopology::kFatTree;
  cluster.network.nodes_per_leaf = 3;
  cluster.network.spines = 1;
  const ByteMatrix bytes = ids_to_rank_zero(12);
  StepRunner classes(cluster, 6, one_step(), /*input_copies=*/false);
  ASSERT_TRUE(classes.represent_nodes({0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(classes.simulated(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 10, 11}));
  work_then_exchange(classes, bytes, 3 * kMillisecond, kMillisecond);
  const StepSimulationResult r = classes.run();
  ASSERT_FALSE(classes.symmetry_broken());
  EXPECT_EQ(r.breakdown.compute, 16 * kMillisecond / 12);  // (2 x 3 + 10 x 1 ms) / 12 ranks
  StepSimulationOptions whole = one_step();
  whole.represent_nodes = false;
  StepRunner every_rank(cluster, 6, whole, /*input_copies=*/false);
  work_then_exchange(every_rank, bytes, 3 * kMillisecond, kMillisecond);
  testing::expect_same_steps(r, every_rank.run());
}

TEST(StepRunnerTest, RunsSharingPlansSplitTheClassesOnce) {
  // The fat tree above: the first runner that shares the plans (a scaling study's estimate)
  // splits the classes given, {0} and {1-5}, into nodes 1, 2, 5 and 3-4, and keeps the split;
  // the next (its flow run) takes it.
  ClusterSpec cluster = nodes_on_one_nic(6, 2);
  cluster.network.topology = NetworkTopology::kFatTree;
  cluster.network.nodes_per_leaf = 3;
  cluster.network.spines = 1;
  StepSimulationOptions options = one_step();
  options.all_to_all_plans = std::make_shared<AllToAllPlans>();
  const std::vector<int> given = {0, 1, 1, 1, 1, 1};
  StepRunner estimate(cluster, 6, options, /*input_copies=*/false);
  ASSERT_TRUE(estimate.represent_nodes(given));
  ASSERT_TRUE(options.all_to_all_plans->split_classes.has_value());
  EXPECT_EQ(options.all_to_all_plans->split_classes->first, given);
  EXPECT_EQ(options.all_to_all_plans->split_classes->second, (std::vector<int>{0, 1, 2, 3, 3, 5}));
  // Told another split for the same classes, the next runner takes it as found.
  options.all_to_all_plans->split_classes->second = {0, 1, 1, 1, 1, 1};
  StepRunner flows(cluster, 6, options, /*input_copies=*/false);
  ASSERT_TRUE(flows.represent_nodes(given));
  EXPECT_EQ(flows.simulated(), (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace trainsim::models
