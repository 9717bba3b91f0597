// Loading recommender model specs and job specs: the shipped ones load with the figures of their
// sources, the dense FLOPs follow from the layer sizes, and each kind of bad input gives one
// error naming the file, line, column and key path.
#include "models/config/recsys_config.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "models/config/config_node.h"
#include "models/config/job_config.h"
#include "models/sharding/sharding_plan.h"

namespace trainsim::models {
namespace {

const std::string kSourceDir = TRAINSIM_SOURCE_DIR;

RecsysModelSpec shipped(const std::string& name) {
  return std::get<RecsysModelSpec>(load_model_spec(kSourceDir + "/configs/models/" + name));
}

double forward_flops_per_example(const RecsysModelSpec& m) {
  double flops = 0;
  for (const Gemm& g : m.forward_gemms(1)) flops += g.flops();
  return flops;
}

TEST(RecsysConfigTest, DlrmDcnV2HasTheMlperfTables) {
  const RecsysModelSpec m = shipped("dlrm-dcnv2.yaml");
  ASSERT_EQ(m.tables.size(), 26u);
  // Row counts and multi-hot sizes of the MLPerf definition (calibration data README).
  double rows = 0, ids = 0;
  for (const auto& t : m.tables) {
    rows += t.rows;
    ids += t.pooling;
    EXPECT_EQ(t.dim, 128);
  }
  EXPECT_DOUBLE_EQ(rows, 204184588.0);
  EXPECT_DOUBLE_EQ(ids, 214.0);
  EXPECT_DOUBLE_EQ(m.tables[20].pooling, 100);
  EXPECT_EQ(m.embedding_optimizer.kind, OptimizerKind::kAdagrad);
  EXPECT_DOUBLE_EQ(m.embedding_optimizer.state_bytes_per_parameter, 4.0);
  // Multi-hot ids derived from the first id, as the benchmark's generator makes them: each table
  // derives pooling - 1 ids per sample.
  for (const auto& t : m.tables) EXPECT_DOUBLE_EQ(t.access.ids_per_sample(), t.pooling);
}

TEST(RecsysConfigTest, DlrmDcnV2ForwardFlopsByHand) {
  // Per example, multiply-adds: bottom MLP 13-512-256-128: 6656 + 131072 + 32768 = 170496.
  // DCNv2 on 128 + 26 x 128 = 3456 features, 3 layers of rank 512 (down and up):
  // 3 x 2 x 3456 x 512 = 10616832. Top MLP 3456-1024-1024-512-256-1: 3538944 + 1048576 +
  // 524288 + 131072 + 256 = 5243136. Two FLOPs per multiply-add.
  const RecsysModelSpec m = shipped("dlrm-dcnv2.yaml");
  EXPECT_EQ(m.interaction_input_width(), 3456);
  EXPECT_DOUBLE_EQ(forward_flops_per_example(m), 2.0 * (170496 + 10616832 + 5243136));
  // Weights plus one bias per output: 16030464 + 896 + 3 x (512 + 3456) + 2817.
  EXPECT_DOUBLE_EQ(m.dense_parameters(), 16030464.0 + 896 + 3 * (512 + 3456) + 2817);
}

const std::string kTransformerModel = R"(name: tiny
kind: recsys
dense_features: 4
embedding:
  dim: 8
  tables:
    - {name: history, rows: 100, pooling: 4}
    - {name: user, rows: 10, pooling: 1, access: {distribution: zipf, alpha: 1.1}}
transformer: {layers: 2, d_model: 8, heads: 2, ffn: 16, sequence_table: history}
interaction: {type: concat}
top_mlp: [4, 1]
)";

TEST(RecsysConfigTest, TransformerFlopsByHand) {
  const RecsysModelSpec m =
      parse_recsys_model_spec(ConfigNode::load_string(kTransformerModel, "m.yaml"));
  ASSERT_TRUE(m.transformer.has_value());
  EXPECT_EQ(m.transformer->sequence_length, 4);
  EXPECT_TRUE(m.tables[0].sequence);
  EXPECT_FALSE(m.tables[1].sequence);
  // Per layer, 4 tokens of width 8: qkv 4x24x8 = 768, scores 4x4x8 = 128, values 4x8x4 = 128,
  // out 4x8x8 = 256, ffn 4x16x8 + 4x8x16 = 1024: 2304 multiply-adds; 2 layers. Top MLP on the
  // concatenation of 4 dense features and 8 + 8 embedding values: 20x4 + 4x1 = 84.
  EXPECT_DOUBLE_EQ(forward_flops_per_example(m), 2.0 * (2 * 2304 + 84));
}

ConfigError model_error(const std::string& yaml) {
  try {
    parse_recsys_model_spec(ConfigNode::load_string(yaml, "m.yaml"));
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return ConfigError("", 0, 0, "", "");
}

std::string with(const std::string& from, const std::string& to) {
  std::string text = kTransformerModel;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(RecsysConfigTest, ZeroRowsIsRejected) {
  const ConfigError e = model_error(with("rows: 10,", "rows: 0,"));
  EXPECT_EQ(e.file(), "m.yaml");
  EXPECT_EQ(e.line(), 8);
  EXPECT_EQ(e.key_path(), "embedding.tables[1].rows");
}

TEST(RecsysConfigTest, DimMustBeAPositiveInteger) {
  for (const std::string dim : {"0", "-8", "7.5", "wide"}) {
    const ConfigError e = model_error(with("  dim: 8\n", "  dim: " + dim + "\n"));
    EXPECT_EQ(e.line(), 5) << dim;
    EXPECT_EQ(e.key_path(), "embedding.dim") << dim;
  }
}

TEST(RecsysConfigTest, HistogramFilesTakeOnlyNumbersAndSomeMass) {
  // A histogram's counts are plain numbers: trailing junk or hex is an error at its line, a
  // histogram that looks nothing up is an error, a directory is not a histogram.
  const std::string dir = (std::filesystem::path(::testing::TempDir()) / "histograms").string();
  std::filesystem::create_directories(dir);
  const std::string model = dir + "/hist_model.yaml";
  auto error_for = [&](const std::string& counts) {
    std::ofstream(dir + "/hist.txt") << counts;
    try {
      parse_recsys_model_spec(ConfigNode::load_string(
          with("access: {distribution: zipf, alpha: 1.1}",
               "access: {distribution: histogram, file: hist.txt}"),
          model));
    } catch (const ConfigError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for:\n" << counts;
    return ConfigError("", 0, 0, "", "");
  };
  for (const std::string junk : {"1abc", "0x10", "nan", "-3"}) {
    const ConfigError e = error_for("5\n" + junk + "\n");
    EXPECT_EQ(e.file(), dir + "/hist.txt") << junk;
    EXPECT_EQ(e.line(), 2) << junk;
    EXPECT_NE(e.message().find("expected an access count (a number), got '" + junk + "'"),
              std::string::npos)
        << e.message();
  }
  EXPECT_NE(error_for("other 1e\n5\n").message().find("expected 'other COUNT'"),
            std::string::npos);
  EXPECT_NE(error_for("0\n0\nother 0\n").message().find("counts are all zero"),
            std::string::npos);
  // Relative frequencies are counts too.
  std::ofstream(dir + "/hist.txt") << "0.5\n0.25\nother 0.25\n";
  const RecsysModelSpec m = parse_recsys_model_spec(ConfigNode::load_string(
      with("access: {distribution: zipf, alpha: 1.1}",
           "access: {distribution: histogram, file: hist.txt}"),
      model));
  EXPECT_DOUBLE_EQ(m.tables[1].access.probability(1), 0.5);
  // A directory named as the file.
  std::filesystem::create_directories(dir + "/hist_dir");
  try {
    parse_recsys_model_spec(ConfigNode::load_string(
        with("access: {distribution: zipf, alpha: 1.1}",
             "access: {distribution: histogram, file: hist_dir}"),
        model));
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "embedding.tables[1].access.file");
    EXPECT_NE(e.message().find("is a directory, not a file"), std::string::npos) << e.message();
  }
}

TEST(RecsysConfigTest, MultiHotIsIndependentOrDerived) {
  const RecsysModelSpec m = parse_recsys_model_spec(ConfigNode::load_string(
      with("alpha: 1.1", "alpha: 1.1, multi_hot: derived"), "m.yaml"));
  EXPECT_DOUBLE_EQ(m.tables[1].access.ids_per_sample(), m.tables[1].pooling);
  EXPECT_DOUBLE_EQ(m.tables[0].access.ids_per_sample(), 1);
  const ConfigError e = model_error(with("alpha: 1.1", "alpha: 1.1, multi_hot: correlated"));
  EXPECT_EQ(e.key_path(), "embedding.tables[1].access.multi_hot");
  EXPECT_NE(e.message().find("must be independent or derived"), std::string::npos);
}

TEST(RecsysConfigTest, HotSetTakesItsSizeAndShare) {
  const RecsysModelSpec m = parse_recsys_model_spec(ConfigNode::load_string(
      with("{distribution: zipf, alpha: 1.1}", "{distribution: hot_set, hot_rows: 2, hot_mass: 0.5}"),
      "m.yaml"));
  EXPECT_DOUBLE_EQ(m.tables[1].access.probability(1), 0.25);
  const ConfigError e = model_error(with("alpha: 1.1", "alpha: 1.1, hot_rows: 2"));
  EXPECT_EQ(e.key_path(), "embedding.tables[1].access.hot_rows");
  EXPECT_NE(e.message().find("applies only to distribution: hot_set"), std::string::npos);
  const ConfigError big = model_error(
      with("{distribution: zipf, alpha: 1.1}", "{distribution: hot_set, hot_rows: 11, hot_mass: 0.5}"));
  EXPECT_NE(big.message().find("exceeds the table's rows"), std::string::npos) << big.message();
}

TEST(RecsysConfigTest, NegativeZipfAlphaIsRejected) {
  const ConfigError e = model_error(with("alpha: 1.1", "alpha: -0.5"));
  EXPECT_EQ(e.line(), 8);
  EXPECT_EQ(e.key_path(), "embedding.tables[1].access.alpha");
}

TEST(RecsysConfigTest, SequenceTableMustMatchTheTransformerWidth) {
  const ConfigError e = model_error(with("d_model: 8", "d_model: 16"));
  EXPECT_EQ(e.key_path(), "transformer.sequence_table");
  EXPECT_NE(e.message().find("has dim 8"), std::string::npos) << e.message();
}

// Jobs: the plan's tables are placed as listed, the others by the strategy.
class JobConfigTest : public ::testing::Test {
 protected:
  JobSpec load(const std::string& yaml) {
    // One file per test: ctest runs tests in parallel processes.
    path_ = ::testing::TempDir() + "job_config_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
    std::ofstream(path_) << yaml;
    return load_job_spec(path_);
  }
  ShardingContext context(int world) {
    ShardingContext c;
    c.model = &model_;
    c.world = world;
    c.gpus_per_node = 4;
    c.batch_per_gpu = 16;
    c.gpu.hbm_capacity_bytes = 80e9;
    c.gpu.hbm_bandwidth_bytes_per_s = 2e12;
    return c;
  }
  RecsysModelSpec model_ =
      parse_recsys_model_spec(ConfigNode::load_string(kTransformerModel, "m.yaml"));
  std::string path_;
};

TEST_F(JobConfigTest, PlanEntriesOverrideTheStrategy) {
  const JobSpec job = load(R"(name: j
batch_per_gpu: 16
sharding:
  strategy: table_wise
  plan:
    - {table: history, strategy: row_wise}
)");
  for (const int world : {4, 8}) {
    const ShardingPlan plan = resolve_sharding(job, context(world));
    EXPECT_EQ(plan.tables[0].strategy, ShardingStrategy::kRowWise);
    EXPECT_EQ(plan.tables[0].ranks.size(), static_cast<std::size_t>(world));
    EXPECT_EQ(plan.tables[1].strategy, ShardingStrategy::kTableWise);
    EXPECT_EQ(plan.tables[1].ranks.size(), 1u);
  }
}

TEST_F(JobConfigTest, StorageIsTheJobsOrAListedTablesOwn) {
  const JobSpec job = load(R"(name: j
batch_per_gpu: 16
sharding:
  strategy: table_wise
  storage: uvm_caching
  cache_load_factor: 0.5
  plan:
    - {table: history, strategy: row_wise, storage: hbm}
)");
  EXPECT_EQ(job.storage, EmbeddingStorage::kUvmCaching);
  EXPECT_DOUBLE_EQ(job.cache_load_factor, 0.5);
  ASSERT_EQ(job.plan.size(), 1u);
  EXPECT_EQ(job.plan[0].storage, EmbeddingStorage::kHbm);
  // Pinning a plan keeps where the listed tables live.
  const ShardingPlan plan = resolve_sharding(job, context(4));
  const JobSpec pinned = job_with_plan(job, plan, {model_.tables[0].name, model_.tables[1].name});
  EXPECT_EQ(pinned.plan[0].storage, EmbeddingStorage::kHbm);
  EXPECT_FALSE(pinned.plan[1].storage.has_value());
  EXPECT_EQ(pinned.storage, EmbeddingStorage::kUvmCaching);
  for (const char* bad : {"storage: ssd", "cache_load_factor: 0", "cache_load_factor: 1.5"}) {
    EXPECT_THROW(load(std::string("name: j\nbatch_per_gpu: 16\nsharding:\n  ") + bad + "\n"),
                 ConfigError)
        << bad;
  }
}

TEST_F(JobConfigTest, PlanNamingAnUnknownTableIsReportedAtItsEntry) {
  const JobSpec job = load(R"(name: j
batch_per_gpu: 16
sharding:
  strategy: plan
  plan:
    - {table: history, strategy: row_wise}
    - {table: item, strategy: table_wise, gpus: [0]}
)");
  try {
    resolve_sharding(job, context(4));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), path_);
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.key_path(), "sharding.plan[1]");
    EXPECT_NE(e.message().find("no table named 'item'"), std::string::npos) << e.message();
  }
}

TEST_F(JobConfigTest, PlanNamingAnUnknownGpuIsReportedAtItsEntry) {
  const JobSpec job = load(R"(name: j
batch_per_gpu: 16
sharding:
  strategy: plan
  plan:
    - {table: user, strategy: table_wise, gpus: [9]}
)");
  EXPECT_NO_THROW(resolve_sharding(job, context(16)));
  try {
    resolve_sharding(job, context(8));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 6);
    EXPECT_EQ(e.key_path(), "sharding.plan[0]");
    EXPECT_NE(e.message().find("GPU 9 is not in the sharding group"), std::string::npos)
        << e.message();
  }
}

TEST_F(JobConfigTest, UnknownStrategyAndBatchErrorsNameTheKey) {
  try {
    load("name: j\nbatch_per_gpu: 16\nsharding: {strategy: diagonal}\n");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.key_path(), "sharding.strategy");
  }
  try {
    load("name: j\nbatch_per_gpu: 16\nglobal_batch: 64\n");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.key_path(), "global_batch");
  }
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

class EvaluationConfigTest : public JobConfigTest {};

TEST_F(EvaluationConfigTest, EveryIsEpochsOrExamples) {
  const JobSpec job = load(R"(name: j
batch_per_gpu: 16
evaluation:
  every: 0.05 epoch
  examples: 89137319
  global_batch: 262144
)");
  EXPECT_TRUE(job.evaluation.configured);
  EXPECT_DOUBLE_EQ(job.evaluation.every, 0.05);
  EXPECT_TRUE(job.evaluation.every_in_epochs);
  EXPECT_DOUBLE_EQ(job.evaluation.examples, 89137319);
  EXPECT_DOUBLE_EQ(job.evaluation.global_batch, 262144);
  const JobSpec examples = load("name: j\nbatch_per_gpu: 16\nevaluation: {every: 2000 examples, "
                                "examples: 100}\n");
  EXPECT_FALSE(examples.evaluation.every_in_epochs);
  EXPECT_DOUBLE_EQ(examples.evaluation.every, 2000);
  EXPECT_DOUBLE_EQ(examples.evaluation.global_batch, 0);  // the training's
  EXPECT_FALSE(load("name: j\nbatch_per_gpu: 16\n").evaluation.configured);
}

TEST_F(EvaluationConfigTest, BadIntervalsAndMissingKeysAreErrorsAtTheKey) {
  for (const char* every : {"0.05 hours", "0 epoch", "epoch", "1 epoch 2"}) {
    try {
      load(std::string("name: j\nbatch_per_gpu: 16\nevaluation: {every: ") + every +
           ", examples: 10}\n");
      ADD_FAILURE() << every;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key_path(), "evaluation.every") << every;
    }
  }
  try {
    load("name: j\nbatch_per_gpu: 16\nevaluation: {every: 1 epoch}\n");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "evaluation.examples") << e.message();
  }
}

}  // namespace
}  // namespace trainsim::models
