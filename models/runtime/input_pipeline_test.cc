#include "models/runtime/input_pipeline.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

// A batch per GPU of 1000 examples of 1000 bytes (1 MB).
InputPipelineInputs reads(double node_bw, double shared_bw, int nodes, Time step) {
  InputPipelineInputs in;
  in.dataloader.configured = true;
  in.dataloader.workers_per_gpu = 4;
  in.dataloader.prefetch_batches = 8;
  in.storage.read_bytes_per_s_per_node = node_bw;
  in.storage.shared_read_bytes_per_s = shared_bw;
  in.nodes = nodes;
  in.gpus_per_node = 2;
  in.batch_per_gpu = 1000;
  in.bytes_per_example = 1000;
  in.step_time = step;
  return in;
}

TEST(InputPipelineTest, StallIsTheReadPeriodBeyondTheStep) {
  // One node reads 2 x 1 MB per step at 2 GB/s: a batch for every GPU each 1 ms.
  const Time step = 1500 * kMicrosecond;
  const InputPipelineResult alone = simulate_input_pipeline(reads(2e9, 8e9, 1, step));
  EXPECT_EQ(alone.stall_per_step, 0);
  EXPECT_EQ(alone.limit, "storage reads per node");
  EXPECT_DOUBLE_EQ(alone.examples_per_s_per_gpu, 1e6);
  // 8 nodes share 8 GB/s: 1 GB/s each, a batch each 2 ms: 0.5 ms stall per 1.5 ms step.
  const InputPipelineResult shared = simulate_input_pipeline(reads(2e9, 8e9, 8, step));
  EXPECT_NEAR(static_cast<double>(shared.stall_per_step), 500.0 * kMicrosecond, kNanosecond);
  EXPECT_EQ(shared.limit, "shared filesystem");
  // Up to 4 nodes the node's own reader is the limit and nothing stalls.
  EXPECT_EQ(simulate_input_pipeline(reads(2e9, 8e9, 4, step)).stall_per_step, 0);
}

InputPipelineInputs preprocessing(int cores, int workers, int depth, Time step) {
  InputPipelineInputs in;
  in.dataloader.configured = true;
  in.dataloader.preprocess_seconds_per_example = 10e-6;  // 1 ms per 100-example batch
  in.dataloader.workers_per_gpu = workers;
  in.dataloader.prefetch_batches = depth;
  in.host.cpu_cores = cores;
  in.nodes = 1;
  in.gpus_per_node = 4;
  in.batch_per_gpu = 100;
  in.step_time = step;
  return in;
}

TEST(InputPipelineTest, PreprocessingSharesTheHostCores) {
  const Time step = 250 * kMicrosecond;
  // 8 workers on 4 cores: one batch per ms per GPU: 0.75 ms stall per 0.25 ms step.
  const InputPipelineResult few = simulate_input_pipeline(preprocessing(4, 2, 4, step));
  EXPECT_NEAR(static_cast<double>(few.stall_per_step), 750.0 * kMicrosecond, kNanosecond);
  EXPECT_EQ(few.limit, "preprocessing (CPU cores)");
  // A core per worker: two batches per ms: 0.25 ms stall.
  const InputPipelineResult many = simulate_input_pipeline(preprocessing(0, 2, 4, step));
  EXPECT_NEAR(static_cast<double>(many.stall_per_step), 250.0 * kMicrosecond, kNanosecond);
  EXPECT_EQ(many.limit, "dataloader workers");
}

TEST(InputPipelineTest, PrefetchDepthBoundsBatchesInFlight) {
  const Time step = 500 * kMicrosecond;
  // One batch in flight: requested when the previous is taken, ready 1 ms later, so each
  // 0.5 ms step waits 0.5 ms.
  const InputPipelineResult shallow = simulate_input_pipeline(preprocessing(0, 4, 1, step));
  EXPECT_NEAR(static_cast<double>(shallow.stall_per_step), 500.0 * kMicrosecond, kNanosecond);
  EXPECT_EQ(shallow.limit, "prefetch depth");
  // Four in flight on four workers: four batches per ms, faster than the steps.
  EXPECT_EQ(simulate_input_pipeline(preprocessing(0, 4, 4, step)).stall_per_step, 0);
}

TEST(InputPipelineTest, JitterKeepsTheMeanAndFollowsTheSeed) {
  // CPU-bound (8 workers on 4 cores, 1 ms of work per batch on average): the long-run rate is set
  // by the total work, so the stall stays near the 0.75 ms of identical batches.
  InputPipelineInputs in = preprocessing(4, 2, 4, 250 * kMicrosecond);
  in.dataloader.preprocess_jitter = 0.3;
  in.seed = 7;
  const InputPipelineResult a = simulate_input_pipeline(in);
  EXPECT_NEAR(static_cast<double>(a.stall_per_step), 750.0 * kMicrosecond, 100.0 * kMicrosecond);
  EXPECT_NE(a.stall_per_step, 750 * kMicrosecond);                          // the batches do differ
  EXPECT_EQ(simulate_input_pipeline(in).stall_per_step, a.stall_per_step);  // same seed
  in.seed = 8;
  EXPECT_NE(simulate_input_pipeline(in).stall_per_step, a.stall_per_step);
}

TEST(InputPipelineTest, NothingToReadOrPrepareNeverStalls) {
  InputPipelineInputs in = preprocessing(0, 1, 1, kMillisecond);
  in.dataloader.preprocess_seconds_per_example = 0;
  const InputPipelineResult r = simulate_input_pipeline(in);
  EXPECT_EQ(r.stall_per_step, 0);
  EXPECT_TRUE(r.limit.empty());
}

}  // namespace
}  // namespace trainsim::models
