// End-to-end tests of `trainsim predict` through run_cli(): defaults, formats, determinism, and
// every kind of bad input (clear message with file, line, column and key; exit 2; no output file).
#include "tools/cli.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/config/param_doc.h"
#include "tools/provenance.h"
#include "tools/result_reader.h"

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;
const std::string kSourceDir = TRAINSIM_SOURCE_DIR;

struct Result {
  int status;
  std::string out;
  std::string err;
};

Result run(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int status = run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempDir {
 public:
  TempDir() {
    path_ =
        fs::temp_directory_path() /
        ("trainsim_cli_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path file(const std::string& name) const { return path_ / name; }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name)) << text;
    return file(name).string();
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(path_), fs::directory_iterator{}));
  }

 private:
  fs::path path_;
};

TEST(CliTest, DefaultPredictPrintsTheScalingTable) {
  const Result r = run({"predict"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* column :
       {"nodes", "GPUs", "global batch", "step (ms)", "throughput (ex/s)", "speedup", "efficiency",
        "compute", "comm stall", "imbalance", "input", "ckpt", "slowest", "dominant"}) {
    EXPECT_NE(r.out.find(column), std::string::npos) << column;
  }
  EXPECT_NE(r.out.find("dgx-h100"), std::string::npos);
}

TEST(CliTest, JsonOutputHasOnePointPerNodeCountWithTheDefinitions) {
  const Result r = run({"predict", "--nodes", "4,1,2", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["points"].size(), 3u);
  const auto& base = doc["points"][0];
  EXPECT_EQ(base["nodes"], 1);
  for (const auto& p : doc["points"]) {
    const double speedup = p["throughput_examples_per_s"].get<double>() /
                           base["throughput_examples_per_s"].get<double>();
    EXPECT_DOUBLE_EQ(p["speedup"].get<double>(), speedup);
    EXPECT_DOUBLE_EQ(p["efficiency"].get<double>(), speedup / p["nodes"].get<double>());
    EXPECT_DOUBLE_EQ(p["global_batch"].get<double>(), p["gpus"].get<double>() * 1024);
    EXPECT_DOUBLE_EQ(p["throughput_examples_per_s"].get<double>(),
                     p["global_batch"].get<double>() / p["step_time_s"].get<double>());
  }
}

TEST(CliTest, SameInputsGiveByteIdenticalOutput) {
  TempDir dir;
  for (const char* format : {"table", "csv", "json"}) {
    const std::string a = dir.file(std::string("a.") + format).string();
    const std::string b = dir.file(std::string("b.") + format).string();
    ASSERT_EQ(run({"predict", "--nodes", "1,2", "--format", format, "--output", a}).status, 0);
    ASSERT_EQ(run({"predict", "--nodes", "1,2", "--format", format, "--output", b}).status, 0);
    EXPECT_EQ(read_file(a), read_file(b)) << format;
    EXPECT_FALSE(read_file(a).empty());
  }
  const std::string t1 = dir.file("t1.json").string();
  const std::string t2 = dir.file("t2.json").string();
  ASSERT_EQ(run({"predict", "--nodes", "2", "--trace", t1}).status, 0);
  ASSERT_EQ(run({"predict", "--nodes", "2", "--trace", t2}).status, 0);
  EXPECT_EQ(read_file(t1), read_file(t2));
}

TEST(CliTest, NodeCountsRunInParallelWithTheSameOutput) {
  // --threads runs node counts at once (largest first), and a job's evaluation steps beside its
  // training steps; the bytes do not depend on it (a dense model, a recommender whose plans and
  // caches the node counts share, and the MLPerf job, which evaluates), and an error is the
  // smallest failing node count's, as on one thread: a sharding group of 24 GPUs fails on 1 and 2
  // nodes of 8 GPUs (it does not divide 8 or 16) and fits 3.
  auto with_threads = [&](std::vector<std::string> a, const char* threads) {
    a.insert(a.end(), {"--threads", threads});
    return run(a);
  };
  const std::string job = "configs/jobs/dlrm-dcnv2.yaml";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"predict", "--nodes", "1,2,4", "--format", "json"},
        std::vector<std::string>{"predict", "--job", job, "--nodes", "1,2,4,8", "--format", "json"},
        std::vector<std::string>{"predict", "--job", "configs/jobs/dlrm-dcnv2-mlperf.yaml",
                                 "--nodes", "1,2", "--format", "json"}}) {
    const Result one = with_threads(args, "1");
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_EQ(with_threads(args, "2").out, one.out);
    EXPECT_EQ(with_threads(args, "3").out, one.out);
  }
  const std::vector<std::string> bad = {"predict",  "--job", job,
                                        "--nodes",  "1,2,3", "--network",
                                        "analytic", "--set", "job.sharding.group=24"};
  for (const char* threads : {"1", "2"}) {
    const Result r = with_threads(bad, threads);
    EXPECT_EQ(r.status, 2) << threads;
    EXPECT_NE(r.err.find("a sharding group of 24 GPUs does not divide 8 GPUs"), std::string::npos)
        << threads << ": " << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(CliTest, RepeatGivesTheMeanAndIntervalOverSeeds) {
  // Every GPU's slowdown drawn per run: --repeat 3 runs seeds 5, 6, 7; the first run is the table,
  // and the interval is the runs' own; the same command gives the same bytes.
  const std::vector<std::string> args = {"predict",
                                         "--nodes",
                                         "1,2",
                                         "--seed",
                                         "5",
                                         "--repeat",
                                         "3",
                                         "--format",
                                         "json",
                                         "--set",
                                         "cluster.stragglers.distribution=uniform",
                                         "--set",
                                         "cluster.stragglers.max=1.3"};
  const Result a = run(args);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(run(args).out, a.out);
  for (const char* threads : {"1", "3"}) {
    std::vector<std::string> more(args);
    more.insert(more.end(), {"--threads", threads});
    EXPECT_EQ(run(more).out, a.out) << threads << " threads";
  }
  const auto doc = nlohmann::json::parse(a.out);
  std::vector<double> throughput;
  for (const std::uint64_t seed : {5, 6, 7}) {
    std::vector<std::string> one(args);
    one[4] = std::to_string(seed);
    one[6] = "1";
    const Result r = run(one);
    ASSERT_EQ(r.status, 0) << r.err;
    throughput.push_back(nlohmann::json::parse(r.out)["points"][1]["throughput_examples_per_s"]);
  }
  const auto& repeated = doc["points"][1]["repeated"];
  EXPECT_EQ(repeated["runs"], 3);
  const double mean = (throughput[0] + throughput[1] + throughput[2]) / 3;
  double squares = 0;
  for (const double t : throughput) squares += (t - mean) * (t - mean);
  // t(0.975, 2) = 4.302653
  EXPECT_NEAR(repeated["throughput"]["mean"].get<double>(), mean, 1e-6 * mean);
  EXPECT_NEAR(repeated["throughput"]["ci95_half_width"].get<double>(),
              4.302653 * std::sqrt(squares / 2) / std::sqrt(3.0), 1e-6 * mean);
  EXPECT_GT(repeated["throughput"]["ci95_half_width"].get<double>(), 0);
  EXPECT_EQ(doc["points"][1]["throughput_examples_per_s"].get<double>(), throughput[0]);
  // The table and the CSV carry it too.
  std::vector<std::string> table(args.begin(), args.end());
  table[8] = "table";
  EXPECT_NE(run(table).out.find("over 3 runs (seeds 5 to 7)"), std::string::npos);
  table[8] = "csv";
  EXPECT_NE(run(table).out.find(",runs,throughput_mean,throughput_ci95,"), std::string::npos);
  EXPECT_EQ(run({"predict", "--repeat", "0"}).status, 2);
}

TEST(CliTest, StragglerSettingsAreCheckedWhereTheyAreGiven) {
  const auto bad = [](const std::string& setting, const std::string& message) {
    const Result r = run({"predict", "--nodes", "1", "--set", setting});
    EXPECT_EQ(r.status, 2) << setting;
    EXPECT_NE(r.err.find(message), std::string::npos) << setting << ": " << r.err;
  };
  bad("cluster.stragglers.gpus=[[3]]", "needs 2 entries, has 1");
  bad("cluster.stragglers.gpus=[[5000, 2]]", "GPU 5000 does not exist (0..1023)");
  bad("cluster.stragglers.gpus=[[3, 0.5]]", "a slowdown is at least 1");
  bad("cluster.stragglers.nics=[[0, 8, 0.5]]", "NIC 8 does not exist (0..7)");
  bad("cluster.stragglers.nics=[[0, 1, 1.5]]", "stragglers.nics");
  bad("cluster.stragglers.failed_uplinks=[[0, 0], [0, 1], [0, 2], [0, 3]]",
      "a leaf needs at least one working uplink");
  bad("cluster.stragglers.failed_uplinks=[[0, 5]]", "spine 5 does not exist (0..3)");
  bad("cluster.stragglers.max=2", "stragglers.max");
  // A slow GPU shows as the slowest rank.
  const Result r = run({"predict", "--nodes", "1", "--format", "json", "--set",
                        "cluster.stragglers.gpus=[[5, 1.5]]"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["points"][0]["slowest_rank"], 5);
}

TEST(CliTest, TraceHasATrackPerRankAndStream) {
  TempDir dir;
  const std::string trace = dir.file("trace.json").string();
  ASSERT_EQ(run({"predict", "--nodes", "1,2", "--trace", trace}).status, 0);
  const auto doc = nlohmann::json::parse(read_file(trace));
  std::set<std::pair<int, int>> tracks;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X") tracks.emplace(e["pid"].get<int>(), e["tid"].get<int>());
  }
  EXPECT_EQ(tracks.size(), 16u * 2u);  // 2 nodes x 8 GPUs, compute and communication streams
}

TEST(CliTest, HelpDocumentsEveryFlag) {
  const Result r = run({"predict", "--help"});
  ASSERT_EQ(r.status, 0);
  for (const char* flag : {"--cluster", "--model", "--nodes", "--format", "--output", "--trace",
                           "--trace-nodes", "--network", "--steps", "--warmup", "--seed"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(run({"--help"}).status, 0);
  EXPECT_NE(run({"--version"}).out.find("trainsim "), std::string::npos);
}

// A broken cluster file: exit 2, the message names file:line:column and the key, and no output
// file appears.
void expect_config_error(const std::string& cluster_text, const std::string& location,
                         const std::string& key, const std::string& fragment) {
  TempDir dir;
  const std::string cluster = dir.write("cluster.yaml", cluster_text);
  const std::string output = dir.file("out.csv").string();
  const Result r = run({"predict", "--cluster", cluster, "--output", output, "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(cluster + ":" + location + ": " + key + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
  EXPECT_EQ(dir.entries(), 1u);  // only the cluster file: no partial or temporary output
  EXPECT_TRUE(r.out.empty());
}

std::string shipped_cluster() {
  return read_file(kSourceDir + "/configs/clusters/pcie-8gpu-2x100g.yaml");
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// "line:column" (1-based) of the first occurrence of `needle` in `text`.
std::string location_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  const auto line_start = text.rfind('\n', at);
  const auto column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  return std::to_string(line) + ":" + std::to_string(column);
}

TEST(CliTest, UnknownKeyIsReportedWithItsLocation) {
  const std::string text = replace(shipped_cluster(), "hbm_efficiency:", "hbm_eficiency:");
  expect_config_error(text, location_of(text, "hbm_eficiency"), "gpu.hbm_eficiency",
                      "did you mean 'hbm_efficiency'");
}

TEST(CliTest, MissingFieldIsReported) {
  const std::string text = replace(shipped_cluster(), "gpus_per_node: 8\n", "");
  // Reported at the top-level map, which starts at its first key.
  expect_config_error(text, location_of(text, "name:"), "gpus_per_node", "missing required key");
}

TEST(CliTest, NegativeBandwidthIsReported) {
  const std::string text =
      replace(shipped_cluster(), "bandwidth: 100 Gb/s", "bandwidth: -100 Gb/s");
  expect_config_error(text, location_of(text, "-100 Gb/s"), "nic.bandwidth", "must be positive");
}

TEST(CliTest, NumbersThatAreNotFiniteAreRefusedAtTheirOption) {
  // nan and inf would slip past "must be positive" checks (nan compares false with everything).
  const Result target = run({"predict", "--target", "nan"});
  EXPECT_EQ(target.status, 2);
  EXPECT_NE(target.err.find("--target: must be a finite number, got 'nan'"), std::string::npos)
      << target.err;
  const Result plan = run({"plan", "--job", kSourceDir + "/configs/jobs/dlrm-dcnv2.yaml",
                           "--target-throughput", "inf"});
  EXPECT_EQ(plan.status, 2);
  EXPECT_NE(plan.err.find("--target-throughput: must be a finite number, got 'inf'"),
            std::string::npos)
      << plan.err;
}

TEST(CliTest, QuantitiesThatWouldOverflowTheClockAreBadInput) {
  // Each used to overflow a picosecond count or trip an internal check (exit 3). A value outside
  // its dimension's bounds is refused at its key; a combination of in-range values that still
  // gives a time the clock cannot hold names what it is (exit 2 either way).
  const std::string dense = kSourceDir + "/configs/models/dense-mlp-1b.yaml";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"predict", "--set", "cluster.gpu.peak_flops.bf16=2"},
       "--set: cluster.gpu.peak_flops.bf16=2: is too small: at least 1 GFLOP/s (a unit "
       "forgotten?), got '2'"},
      {{"predict", "--nodes", "2", "--set", "cluster.nic.bandwidth=1e-300"},
       "--set: cluster.nic.bandwidth=1e-300: is too small: at least 1 MB/s (a unit forgotten?), "
       "got '1e-300'"},
      {{"predict", "--model", dense, "--set", "model.flops_per_example=1e300"},
       "--set: model.flops_per_example=1e300: is too large: at most 1e24 FLOP, got '1e300'"},
      {{"predict", "--set", "cluster.storage.shared_read_bandwidth=1 B/s"},
       "--set: cluster.storage.shared_read_bandwidth=1 B/s: is too small: at least 1 MB/s"},
      {{"predict", "--model", dense, "--set", "model.flops_per_example=1e24", "--set",
        "cluster.gpu.peak_flops.bf16=1 GFLOP/s"},
       "a GPU's compute per step (model.flops_per_example x the batch over "
       "cluster.gpu.peak_flops): a simulated time of"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

TEST(CliTest, FilesThatCannotBeReadAreReportedWhereTheyAreNamed) {
  TempDir dir;
  // A job naming a model file that is not there: the job's line, column and key.
  const std::string job = dir.write("job.yaml",
                                    "name: j\n"
                                    "cluster: " +
                                        kSourceDir +
                                        "/configs/clusters/dgx-h100.yaml\n"
                                        "model: missing.yaml\n"
                                        "batch_per_gpu: 64\n");
  Result r = run({"predict", "--job", job, "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(
      r.err.find(job + ":3:8: model: 'missing.yaml': cannot open the file: it does not exist"),
      std::string::npos)
      << r.err;
  // A directory given as a config file.
  r = run({"predict", "--cluster", dir.file("").string(), "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is a directory, not a file"), std::string::npos) << r.err;
  // A sweep whose base job names that missing file is bad input before any row: exit 2, no
  // output file (it used to write a row per point, each with the error, and exit 0).
  const std::string sweep =
      dir.write("sweep.yaml", "name: s\njob: " + job +
                                  "\nnetwork: analytic\naxes:\n  - key: nodes\n"
                                  "    values: [1, 2]\n");
  const std::string csv = dir.file("rows.csv").string();
  r = run({"sweep", sweep, "-o", csv});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(job + ":3:8: model: 'missing.yaml'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(csv));
}

TEST(CliTest, MalformedResultAndLogFieldsAreErrorsAtTheirLine) {
  // Library parsers (stoull, substr, json's type checks) used to escape as exit 1 with their bare
  // message; each is now the file's line, exit 2.
  TempDir dir;
  const std::string html = dir.file("r.html").string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string csv =
      dir.write("r.csv",
                "# trainsim sweep {\"trainsim_sweep\":\"s\"}\nindex,nodes,gpus\n"
                "99999999999999999999999999,1,8\n");
  const std::string jsonl =
      dir.write("r.jsonl", "{\"trainsim_sweep\":\"s\",\"axes\":[\"nodes\"]}\n{\"index\":\"x\"}\n");
  const std::string header = dir.write("h.csv", "# trainsim sweep without its object\n");
  const std::string log = dir.write("g.log", "# nccl-tests\n#  nGpus 99999999999999999999\n");
  const std::string bench =
      dir.write("b.jsonl",
                "{\"bench\":\"embedding\",\"gpu\":\"G\",\"dtype\":\"fp32\",\"time_s\":1e-3,"
                "\"bytes\":1e9,\"dim\":1e30}\n");
  const std::vector<Case> cases = {
      {{"report", csv, "-o", html}, csv + ":3:1: cannot read the results: a field is malformed"},
      {{"report", jsonl, "-o", html}, jsonl + ":2:1: cannot read the results:"},
      {{"report", header, "-o", html}, header + ":1:1: the sweep header has no JSON object"},
      {{"calibrate", "--cluster", kSourceDir + "/configs/clusters/dgx-h100.yaml", "--nccl-tests",
        log + "@1x8"},
       log + ":2:1: the nGpus column is not a whole number"},
      {{"calibrate", "--microbench", bench, "-o", dir.file("c.yaml").string()},
       bench + ":1:1: dim: field 'dim' must be a whole number from 1 to 1048576"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(html));
  // A name that is not UTF-8 is written to JSON with the bad byte replaced, not an exit 1.
  const Result named =
      run({"predict", "--nodes", "1", "--format", "json", "--set", "cluster.name=bad\xffname"});
  EXPECT_EQ(named.status, 0) << named.err;
  nlohmann::json doc;
  EXPECT_NO_THROW(doc = nlohmann::json::parse(named.out));
  EXPECT_TRUE(doc.contains("cluster"));
}

TEST(CliTest, ZeroGpusIsReported) {
  const std::string text = replace(shipped_cluster(), "gpus_per_node: 8", "gpus_per_node: 0");
  expect_config_error(text, location_of(text, "0\ngpu:"), "gpus_per_node", "positive whole number");
}

TEST(CliTest, CountsBeyondAnyBuiltMachineAreRefusedAtTheirKey) {
  // A physical range per count key (2^31 - 1 GPUs per node used to be accepted by the reader and
  // fail later allocating them).
  std::string text = replace(shipped_cluster(), "gpus_per_node: 8", "gpus_per_node: 2147483647");
  expect_config_error(text, location_of(text, "2147483647"), "gpus_per_node", "at most 1024");
  text = replace(shipped_cluster(), "\nnodes: 8", "\nnodes: 2000000");
  expect_config_error(text, location_of(text, "2000000"), "nodes", "at most 1048576");
}

TEST(CliTest, NicThatMapsToNoGpuIsReported) {
  const std::string text = replace(shipped_cluster(), "gpus: [[0, 1, 2, 3], [4, 5, 6, 7]]",
                                   "gpus: [[0, 1, 2, 3, 4, 5, 6, 7], []]");
  expect_config_error(text, location_of(text, "[]]"), "nic.gpus[1]", "maps to no GPU");
}

TEST(CliTest, MalformedYamlIsReported) {
  TempDir dir;
  const std::string cluster = dir.write("cluster.yaml", "name: x\nnodes: [1\n");
  const Result r = run({"predict", "--cluster", cluster});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(cluster + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("invalid YAML"), std::string::npos) << r.err;
}

TEST(CliTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run({"predict", "--nodes", "0"}).status, 2);
  EXPECT_EQ(run({"predict", "--nodes", "1,,2"}).status, 2);
  EXPECT_EQ(run({"predict", "--format", "xml"}).status, 2);
  EXPECT_EQ(run({"predict", "--network", "magic"}).status, 2);
  EXPECT_EQ(run({"predict", "--bogus"}).status, 2);
  EXPECT_EQ(run({"frobnicate"}).status, 2);
  const Result too_many = run({"predict", "--nodes", "200"});
  EXPECT_EQ(too_many.status, 2);
  EXPECT_NE(too_many.err.find("has 128 nodes"), std::string::npos) << too_many.err;
  const Result missing = run({"predict", "--model", "/nonexistent/model.yaml"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("/nonexistent/model.yaml: cannot open"), std::string::npos);
}

TEST(CliTest, NodeListsAcceptRanges) {
  EXPECT_EQ(parse_node_list("1,2,4-6"), (std::vector<int>{1, 2, 4, 5, 6}));
  EXPECT_THROW(parse_node_list("3-1"), UsageError);
  EXPECT_THROW(parse_node_list("a"), UsageError);
}

TEST(CliTest, UnwritableOutputFailsBeforeSimulating) {
  const Result r = run({"predict", "--output", "/nonexistent-dir/out.csv"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot write /nonexistent-dir/out.csv"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::cli

namespace trainsim::cli {
namespace {

// End offsets of the whitespace-separated fields of a line (columns are right-aligned).
std::vector<std::size_t> field_ends(const std::string& line) {
  std::vector<std::size_t> ends;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != ' ' && (i + 1 == line.size() || line[i + 1] == ' ')) ends.push_back(i + 1);
  }
  return ends;
}

std::vector<std::string> data_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#' && line[0] != '>') lines.push_back(line);
  }
  return lines;
}

TEST(CollectiveCliTest, TableHasTheColumnLayoutOfNcclTests) {
  // The same size in a real log and in a prediction: every field must end in the same column.
  const std::string real =
      read_file(kSourceDir +
                "/validation/nccl-tests/h100_10nodes_x1gpu_10ranks_nccl2.29.2_allcolls_xxrjun.log");
  const std::string real_row = data_lines(real).front();  // 33554432 bytes of all_reduce
  const Result r = run({"collective", "--op", "all_reduce", "--nodes", "10", "--gpus-per-node", "1",
                        "-b", "32M", "-e", "64M", "-f", "2", "-d", "double"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = data_lines(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(field_ends(rows[0]), field_ends(real_row)) << rows[0] << "\n" << real_row;
  EXPECT_EQ(rows[0].substr(0, 52), real_row.substr(0, 52));  // size, count, type, redop, root
  // The header lines are nccl-tests' own, and the footer gives the mean busbw.
  for (const char* header :
       {"#       size         count      type   redop    root     time   algbw   busbw  #wrong",
        "# Avg bus bandwidth    : ", "# Collective test starting: all_reduce_perf"}) {
    EXPECT_NE(r.out.find(header), std::string::npos) << header;
  }
}

TEST(CollectiveCliTest, TheEfaA100ClusterRunsTheProtocolsItsPluginLeaves) {
  // AWS's EFA plugin sets NCCL_PROTO=simple on p4d/p4de (no ordered 128-byte RDMA writes), and the
  // shipped cluster file of such an instance says so in collectives.env: every size runs Simple.
  // Given LL and LL128 back (--env overrides the file), small sizes take LL and mid sizes LL128.
  const std::string cloud = kSourceDir + "/configs/clusters/cloud-a100-4x100g.yaml";
  const auto algorithms = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"collective", "--cluster", cloud, "--nodes", "2"};
    for (const char* sweep : {"-b", "8", "-e", "64M", "-f", "8"}) args.emplace_back(sweep);
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    const std::size_t at = r.out.find("# Algorithm per size: ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  const std::string plugin = algorithms({});
  EXPECT_NE(plugin.find("/simple"), std::string::npos) << plugin;
  EXPECT_EQ(plugin.find("/ll"), std::string::npos) << plugin;
  const std::string all = algorithms({"--env", "NCCL_PROTO=LL,LL128,Simple"});
  EXPECT_NE(all.find("/ll "), std::string::npos) << all;
  EXPECT_NE(all.find("/ll128 "), std::string::npos) << all;
}

TEST(CollectiveCliTest, SizesCountsAndBusFactorsFollowNcclTests) {
  // alltoall on 10 ranks of doubles: 32 MiB rounds down to 33554400 bytes, 419430 elements per
  // peer (as the 10-node log prints), and busbw = algbw x 9/10.
  const Result r = run({"collective", "--op", "alltoall", "--nodes", "10", "--gpus-per-node", "1",
                        "-b", "32M", "-e", "32M", "-d", "double", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& row = doc["rows"][0];
  EXPECT_EQ(row["size_bytes"], 33554400);
  EXPECT_EQ(row["count"], 419430);
  EXPECT_DOUBLE_EQ(row["busbw_gb_per_s"].get<double>(), row["algbw_gb_per_s"].get<double>() * 0.9);
  EXPECT_DOUBLE_EQ(row["algbw_gb_per_s"].get<double>(),
                   33554400 / (row["time_us"].get<double>() * 1e-6) / 1e9);
}

TEST(CollectiveCliTest, FlagsMeanWhatTheyMeanInNcclTests) {
  // -f 1 (the default) adds -i per step: 1, 2, 3 MiB; -o names the reduction; -n, -w, -c and -g
  // go into the header line nccl-tests prints; --output writes the file; sendrecv rows carry the
  // reduction as nccl-tests prints them.
  TempDir dir;
  const std::string output = dir.file("pred.txt").string();
  Result r = run({"collective", "--op", "all_reduce", "-b",  "1M", "-e",       "3M",
                  "-i",         "1M",   "-o",         "max", "-n", "50",       "-w",
                  "2",          "-c",   "0",          "-g",  "8",  "--output", output});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = read_file(output);
  const auto rows = data_lines(text);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].substr(0, 12), "     3145728");
  EXPECT_NE(rows[0].find("   max  "), std::string::npos) << rows[0];
  EXPECT_NE(text.find("# nThread 1 nGpus 8 minBytes 1048576 maxBytes 3145728 step: 1048576(bytes) "
                      "warmup iters: 2 iters: 50 agg iters: 1 validation: 0 graph: 0"),
            std::string::npos)
      << text;
  r = run({"collective", "--op", "sendrecv", "--nodes", "2", "-b", "1G", "-e", "1G", "-v"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(data_lines(r.out)[0].find("   sum  "), std::string::npos);
  EXPECT_NE(data_lines(r.out)[0].find("# p2p/simple"), std::string::npos) << r.out;
  EXPECT_EQ(run({"collective", "-o", "xor"}).status, 2);
  EXPECT_EQ(run({"collective", "--env", "NCCL_ALGO=Bogus"}).status, 2);
}

TEST(CollectiveCliTest, FlowAndAnalyticAgreeOnOneNode) {
  const Result flow = run({"collective", "--op", "all_gather", "-b", "1M", "-e", "1G", "-f", "4",
                           "--algo", "ring", "--format", "csv"});
  const Result analytic = run({"collective", "--op", "all_gather", "-b", "1M", "-e", "1G", "-f",
                               "4", "--algo", "ring", "--format", "csv", "--network", "analytic"});
  ASSERT_EQ(flow.status, 0) << flow.err;
  EXPECT_EQ(flow.out, analytic.out);
}

// The SimGrid reference platform (50 GB/s, 1 us NICs; latency paid before bandwidth) on 2 or 3
// nodes of one GPU each: every transfer crosses exactly two NIC links.
std::vector<std::string> flat_on_crossbar(int nodes, std::vector<std::string> more) {
  std::vector<std::string> args = {"collective",
                                   "--cluster",
                                   kSourceDir + "/validation/simgrid/crossbar.yaml",
                                   "--nodes",
                                   std::to_string(nodes),
                                   "--gpus-per-node",
                                   "1",
                                   "--algo",
                                   "flat",
                                   "--format",
                                   "json"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(CollectiveCliTest, FlatRingAllReduceIsTheAlphaBetaFormula) {
  // 16 GPUs on 2 nodes: 2(P-1) = 30 steps of S/P = 1 MiB, each paced by a NIC hop of
  // 2 us + 1048576 B / 50 GB/s = 22.97152 us: 689.1456 us, flow and analytic alike.
  for (const char* network : {"flow", "analytic"}) {
    const Result r =
        run({"collective", "--cluster", kSourceDir + "/validation/simgrid/crossbar.yaml", "--nodes",
             "2", "--op", "all_reduce", "-b", "16M", "-e", "16M", "--algo", "flat", "--network",
             network, "--format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto row = nlohmann::json::parse(r.out)["rows"][0];
    EXPECT_NEAR(row["time_us"].get<double>(), 689.1456, 1e-6) << network;
    EXPECT_EQ(row["algorithm"], "flat");
  }
}

TEST(CollectiveCliTest, OperationsStartedTogetherShareTheLinksByMaxMin) {
  // 2 GPUs: the ring all-reduce of 100 MB sends 50 MB each way twice; the all-to-all of 100 MB
  // sends 50 MB each way once. Together, both first messages wait 2 us, then share each NIC
  // direction at 25 GB/s: the all-to-all ends at 2 + 2000 = 2002 us (alone 2 + 1000 = 1002 us);
  // the ring's second step then runs alone: 2002 + 2 + 1000 = 3004 us (alone 2 x 1002 = 2004).
  const Result r = run(flat_on_crossbar(2, {"--op", "all_reduce", "-b", "100000000", "-e",
                                            "100000000", "--with", "alltoall:100000000:flat"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  EXPECT_NEAR(row["time_us"].get<double>(), 3004.0, 1e-6);
  EXPECT_NEAR(row["alone_time_us"].get<double>(), 2004.0, 1e-6);
  const auto& a2a = row["with"][0];
  EXPECT_EQ(a2a["op"], "alltoall");
  EXPECT_NEAR(a2a["time_us"].get<double>(), 2002.0, 1e-6);
  EXPECT_NEAR(a2a["alone_time_us"].get<double>(), 1002.0, 1e-6);
  // The table says the same after its rows.
  const Result table =
      run({"collective", "--cluster", kSourceDir + "/validation/simgrid/crossbar.yaml", "--nodes",
           "2", "--gpus-per-node", "1", "--algo", "flat", "-b", "100000000", "-e", "100000000",
           "--with", "alltoall:100000000:flat"});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("all_reduce 3004.00 us (alone 2004.00 us, 1.499x); alltoall 100000000 "
                           "B 2002.00 us (alone 1002.00 us, 1.998x)"),
            std::string::npos)
      << table.out;
}

TEST(CollectiveCliTest, HotGpusMakeTheAllToAllUneven) {
  // 3 GPUs, 120 MB: 40 MB to each peer, GPU 0 sends twice that. Every NIC direction carries two
  // messages at 25 GB/s; the 40 MB ones end at 2 + 1600 us, then GPU 0's two 80 MB messages
  // share its NIC for their last 40 MB: 1602 + 1600 = 3202 us for every GPU (1602 us evenly).
  Result r = run(flat_on_crossbar(3, {"--op", "alltoall", "-b", "120000000", "-e", "120000000",
                                      "--hot-gpus", "0", "--hot-factor", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_NEAR(doc["rows"][0]["time_us"].get<double>(), 3202.0, 1e-6);
  EXPECT_NEAR(doc["rows"][0]["mean_rank_finish_us"].get<double>(), 3202.0, 1e-6);
  EXPECT_EQ(doc["hot_gpus"], nlohmann::json::array({0}));
  r = run(flat_on_crossbar(3, {"--op", "alltoall", "-b", "120000000", "-e", "120000000"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NEAR(nlohmann::json::parse(r.out)["rows"][0]["time_us"].get<double>(), 1602.0, 1e-6);
  // local:0 is GPU 0 of every node: on 3 nodes of one GPU, all three; then evenly 2x: 3202 us.
  r = run(flat_on_crossbar(3, {"--op", "alltoall", "-b", "120000000", "-e", "120000000",
                               "--hot-gpus", "local:0", "--hot-factor", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["hot_gpus"], nlohmann::json::array({0, 1, 2}));
  EXPECT_NEAR(doc["rows"][0]["time_us"].get<double>(), 3202.0, 1e-6);
}

TEST(CollectiveCliTest, ContentionOptionsRejectBadInput) {
  const auto bad = [](std::vector<std::string> more, const std::string& message) {
    const Result r = run(flat_on_crossbar(2, std::move(more)));
    EXPECT_EQ(r.status, 2) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  bad({"--with", "alltoall"}, "OP:SIZE[:ALGO]");
  bad({"--with", "alltoall:1M:bogus"}, "unknown algorithm 'bogus'");
  bad({"--with", "gather:1M"}, "unknown collective 'gather'");
  bad({"--with", "alltoall:1M", "--network", "analytic"}, "--with needs --network flow");
  bad({"--op", "alltoall", "--hot-factor", "4"}, "--hot-factor needs --hot-gpus");
  bad({"--op", "alltoall", "--hot-gpus", "2"}, "'2' is not between 0 and 1");
  bad({"--op", "alltoall", "--hot-gpus", "local:x"}, "'x' is not a number");
  bad({"--hot-gpus", "0"}, "run alltoall");
  bad({"--op", "broadcast"}, "broadcast has no flat form");
  bad({"--set", "job.batch_per_gpu=2"}, "only cluster.KEY settings");
  bad({"--set", "cluster.network.oversubscription=0.5"}, "--set");
}

TEST(CollectiveCliTest, BadRequestsExitWithTwo) {
  EXPECT_EQ(run({"collective", "--op", "hypercube"}).status, 2);
  EXPECT_EQ(run({"collective", "--algo", "nvls", "--nodes", "2"}).status, 2);  // NVLS: one node
  EXPECT_EQ(run({"collective", "-b", "1X"}).status, 2);
  EXPECT_EQ(run({"collective", "-b", "8M", "-e", "1M"}).status, 2);
  EXPECT_EQ(run({"collective", "--gpus-per-node", "9"}).status, 2);
}

TEST(CalibrateCliTest, ALogWithAbsurdTimesStillCalibratesInRange) {
  // Times that fall 900-fold as the size doubles pull the fit towards latencies beyond the
  // simulator's clock (it used to stop there with exit 3): the search backs away from values it
  // cannot run and writes a cluster that loads.
  TempDir dir;
  const std::string log = dir.write(
      "absurd.log",
      "# Collective test starting: all_reduce_perf\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1   9000.0    0.12    0.21      0   "
      "9000.0    0.12    0.21      0\n"
      "     2097152        524288     float     sum      -1   5000.0    0.42    0.73      0   "
      "5000.0    0.42    0.73      0\n"
      "     4194304       1048576     float     sum      -1     10.0  419.43  733.0      0     "
      "10.0  419.43  733.0      0\n"
      "     8388608       2097152     float     sum      -1     11.0  762.6   1334.5     0     "
      "11.0  762.6  1334.5      0\n");
  const std::string output = dir.file("calibrated.yaml").string();
  const Result r = run({"calibrate", "--cluster", kSourceDir + "/configs/clusters/dgx-h100.yaml",
                        "--nccl-tests", log + "@1x8", "-o", output});
  EXPECT_EQ(r.status, 0) << r.err;
  // The written cluster predicts.
  const Result predicted = run({"predict", "--cluster", output, "--nodes", "1"});
  EXPECT_EQ(predicted.status, 0) << predicted.err;
}

TEST(CalibrateCliTest, BadLogsAreReportedWithFileAndLine) {
  TempDir dir;
  const std::string empty =
      dir.write("empty.log", "# nccl-tests version 2.17.8\n# Avg bus bandwidth : 0\n");
  Result r = run({"calibrate", "--nccl-tests", empty});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(empty + ": no data rows"), std::string::npos) << r.err;

  const std::string unknown =
      dir.write("unknown.log", "# Collective test starting: hypercube_perf\n");
  r = run({"calibrate", "--nccl-tests", unknown});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(unknown + ":1:1: unknown collective 'hypercube_perf'"), std::string::npos)
      << r.err;

  const std::string bad_size =
      dir.write("size.log",
                "# Collective test starting: all_reduce_perf\n"
                "#       size         count      type   redop    root     time   algbw   busbw "
                "#wrong     time   algbw   busbw #wrong\n"
                "    1048x76        262144     float     sum      -1    41.45   25.30   44.27      "
                "0    42.10   24.90   43.58      0\n");
  r = run({"calibrate", "--nccl-tests", bad_size});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(bad_size + ":3:1: the size column is not a whole number"), std::string::npos)
      << r.err;

  const std::string bench = dir.write(
      "bench.jsonl", "{\"bench\":\"gemm\",\"gpu\":\"G\",\"dtype\":\"bf16\",\"time_s\":0.1}\n");
  const std::string output = dir.file("out.yaml").string();
  r = run({"calibrate", "--microbench", bench, "-o", output});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(bench + ":1:1: flops: missing field 'flops'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
}

TEST(CalibrateCliTest, ALogThatDoesNotNameItsCollectiveIsNamedOnTheCommandLine) {
  // The AWS p4de log has neither a 'Collective test starting' line nor a command line: LOG:OP says
  // what it measured (with the algorithm, in either order, and @NxG for its rank count).
  const std::string log = kSourceDir +
                          "/validation/nccl-tests/"
                          "a100_2nodes_x8_all_reduce_aws-p4de-efa-4x100g_ncclunk_awsome-dist-"
                          "training.log";
  const std::string cloud = kSourceDir + "/configs/clusters/cloud-a100-4x100g.yaml";
  Result r = run({"calibrate", "--cluster", cloud, "--nccl-tests", log + "@2x8"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot tell which collective"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("LOG:all_reduce"), std::string::npos) << r.err;
  r = run({"calibrate", "--cluster", cloud, "--nccl-tests", log + ":all_reduce@2x8"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("all_reduce"), std::string::npos);
  EXPECT_NE(r.out.find("/simple"), std::string::npos);  // the cluster's NCCL_PROTO=Simple
  for (const char* suffix : {":all_reduce:ring@2x8", ":ring:all_reduce@2x8"}) {
    r = run({"calibrate", "--cluster", cloud, "--nccl-tests", log + suffix});
    ASSERT_EQ(r.status, 0) << suffix << ": " << r.err;
    EXPECT_EQ(r.out.find("tree/"), std::string::npos) << suffix;  // Ring forced on every row
  }
  r = run({"calibrate", "--cluster", cloud, "--nccl-tests", log + ":hypercube@2x8"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("'hypercube' is neither an algorithm"), std::string::npos) << r.err;
}

TEST(CalibrateCliTest, WritesACalibratedClusterThatLoadsAndPredicts) {
  TempDir dir;
  const std::string output = dir.file("calibrated.yaml").string();
  const Result r = run(
      {"calibrate", "--nccl-tests",
       kSourceDir + "/validation/nccl-tests/h100x8_1node_allreduce_RING_nccl2.26.2_together.log",
       "-o", output});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("busbw error per log"), std::string::npos);
  const std::string yaml = read_file(output);
  EXPECT_NE(yaml.find("h100x8_1node_allreduce_RING_nccl2.26.2_together.log"), std::string::npos);
  // The calibrated cluster is a valid input for the other commands.
  const Result again =
      run({"collective", "--cluster", output, "-b", "1G", "-e", "1G", "--algo", "ring"});
  EXPECT_EQ(again.status, 0) << again.err;
  // It carries the fit's relative uncertainties, within which predict --repeat draws its runs:
  // nothing else is random here, so the interval comes from them alone.
  EXPECT_NE(yaml.find("uncertainty:"), std::string::npos);
  EXPECT_NE(yaml.find("# relative standard uncertainty of the fit"), std::string::npos);
  const Result repeated =
      run({"predict", "--cluster", output, "--nodes", "1", "--repeat", "4", "--format", "json"});
  ASSERT_EQ(repeated.status, 0) << repeated.err;
  const auto point = nlohmann::json::parse(repeated.out)["points"][0];
  EXPECT_GT(point["repeated"]["step_time_s"]["ci95_half_width"].get<double>(), 0);
  const Result plain = run({"predict", "--nodes", "1", "--repeat", "4", "--format", "json"});
  EXPECT_EQ(
      nlohmann::json::parse(plain.out)["points"][0]["repeated"]["step_time_s"]["ci95_half_width"]
          .get<double>(),
      0.0);
}

TEST(ValidateCliTest, RunsACaseAndReportsPass) {
  const Result r = run({"validate", "--summary", "--case",
                        kSourceDir + "/validation/collectives/h100-b-together.yaml"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS"), std::string::npos);
  EXPECT_NE(r.out.find("1 case(s), 0 failed"), std::string::npos);
}

TEST(ValidateCliTest, FailsWhenTheToleranceIsMissed) {
  TempDir dir;
  const std::string c =
      dir.write("tight.yaml",
                "name: impossibly tight\ncluster: configs/clusters/dgx-h100.yaml\nfit:\n  - log: " +
                    kSourceDir +
                    "/validation/nccl-tests/h100x8_1node_allreduce_RING_nccl2.26.2_together.log\n"
                    "    algorithm: ring\nmax_mean_error: 0.01%\nmax_error: 0.01%\n");
  const Result r = run({"validate", "--summary", "--case", c});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("FAIL"), std::string::npos);
}

TEST(ValidateCliTest, LeaveOneOutOfASingleLogPredictsItFromTheClusterFile) {
  // Nothing is left to fit on: the log is predicted from the cluster file as written, and the
  // report still scores it against the case's bound and target.
  TempDir dir;
  const std::string c = dir.write(
      "one.yaml",
      "name: one log\ncluster: configs/clusters/dgx-h100.yaml\nfit:\n  - log: " + kSourceDir +
          "/validation/nccl-tests/h100x8_1node_allreduce_RING_nccl2.26.2_together.log\n"
          "    algorithm: ring\nleave_one_out_max_mean_error: 0.01%\n"
          "leave_one_out_target: 0.01%\n");
  const Result r = run({"validate", "--leave-one-out", "--summary", "--case", c});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("1 log(s) held out, 1 system(s) failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 of 1 log(s) and collective(s) meet their target"), std::string::npos);
}

TEST(ValidateCliTest, AMissingLogIsReportedWhereTheCaseNamesIt) {
  TempDir dir;
  const std::string c =
      dir.write("missing.yaml",
                "name: missing\ncluster: configs/clusters/dgx-h100.yaml\nfit:\n  - no/such.log\n");
  const Result r = run({"validate", "--summary", "--case", c});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("missing.yaml:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no nccl-tests log 'no/such.log'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::cli

// Recommender jobs: predict --job, shard, the worked scenario of the README, and bad input.
namespace trainsim::cli {
namespace {

nlohmann::json predict_json(const std::string& job, const std::string& nodes) {
  const Result r = run({"predict", "--job", job, "--nodes", nodes, "--format", "json"});
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

double share(const nlohmann::json& point, const char* category) {
  return point["breakdown_s"][category].get<double>() / point["step_time_s"].get<double>();
}

TEST(RecsysCliTest, PredictJobPrintsTheBreakdownAndTheSlowestRank) {
  const Result r = run({"predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--nodes", "1,2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dlrm-dcnv2"), std::string::npos);
  const auto doc = predict_json("configs/jobs/dlrm-dcnv2.yaml", "1,2");
  ASSERT_EQ(doc["points"].size(), 2u);
  for (const auto& p : doc["points"]) {
    // The categories add up to the step.
    double sum = 0;
    for (const auto& [k, v] : p["breakdown_s"].items()) sum += v.get<double>();
    EXPECT_NEAR(sum, p["step_time_s"].get<double>(), 1e-9);
    EXPECT_GE(p["slowest_rank"].get<int>(), 0);
    EXPECT_LT(p["slowest_rank"].get<int>(), p["gpus"].get<int>());
    EXPECT_DOUBLE_EQ(p["global_batch"].get<double>(), 8192.0 * p["gpus"].get<double>());
  }
}

TEST(RecsysCliTest, TraceShowsEveryRankAndStream) {
  TempDir dir;
  const std::string trace = dir.file("trace.json").string();
  ASSERT_EQ(
      run({"predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--nodes", "2", "--trace", trace})
          .status,
      0);
  const auto doc = nlohmann::json::parse(read_file(trace));
  std::set<std::pair<int, int>> tracks;
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    tracks.emplace(e["pid"].get<int>(), e["tid"].get<int>());
    names.insert(e["name"].get<std::string>().substr(0, e["name"].get<std::string>().find(" #")));
  }
  // 16 GPUs: copy, compute and communication streams, and the prefetch stream of the next batch's
  // id all-to-all.
  EXPECT_EQ(tracks.size(), 16u * 4u);
  for (const char* task : {"h2d batch", "id all-to-all", "embedding lookup", "embedding all-to-all",
                           "gradient all-to-all", "embedding update"}) {
    EXPECT_EQ(names.count(task), 1u) << task;
  }
}

TEST(RecsysCliTest, TraceSlicesSayWhatMovesAndLinksShowTheirUse) {
  // The MLPerf job on 2 nodes: each communication slice carries its collective, bytes and peers
  // (an all-reduce its algorithm and protocol); arrows join every send to its receive; a rank
  // that waits for the last to join has that wait as a slice of its own; counter tracks give each
  // NIC's and NVLink port's use, in % of its rate, over the steps.
  TempDir dir;
  const std::string trace = dir.file("trace.json").string();
  ASSERT_EQ(run({"predict", "--job", "configs/jobs/dlrm-dcnv2-mlperf.yaml", "--nodes", "2",
                 "--trace", trace})
                .status,
            0);
  const auto doc = nlohmann::json::parse(read_file(trace));
  int all_to_all = 0, all_reduce = 0, waits = 0;
  std::map<std::uint64_t, int> arrows;  // id -> 1 for a start, 2 for an end
  std::map<std::string, double> peak;   // counter -> its highest value
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    // A slice without arguments has no "args" key, and a const json has no such key to read.
    if (ph == "X" && e.contains("args") && e["args"].contains("collective")) {
      const auto& a = e["args"];
      if (e["name"].get<std::string>().rfind("embedding all-to-all", 0) == 0) {
        ++all_to_all;
        EXPECT_GT(std::stod(a["bytes sent"].get<std::string>()), 0);
        EXPECT_NE(a["peers"].get<std::string>().find("sent to"), std::string::npos);
      }
      if (a["collective"] == "all-reduce") {
        ++all_reduce;
        EXPECT_TRUE(a.contains("algorithm") && a.contains("protocol")) << a.dump();
      }
    } else if (ph == "X" && e["name"].get<std::string>().rfind("waiting for rank", 0) == 0) {
      ++waits;
    } else if (ph == "s" || ph == "f") {
      arrows[e["id"].get<std::uint64_t>()] += ph == "s" ? 1 : 2;
    } else if (ph == "C") {
      const double v = e["args"]["% of its rate"].get<double>();
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 100.0 + 1e-6);  // no link carries more than its rate
      double& p = peak[e["name"].get<std::string>()];
      p = std::max(p, v);
    }
  }
  EXPECT_EQ(all_to_all, 16 * 3);  // every GPU, three steps
  EXPECT_GT(all_reduce, 0);
  EXPECT_GT(waits, 0);
  ASSERT_FALSE(arrows.empty());
  for (const auto& [id, ends] : arrows) EXPECT_EQ(ends, 3) << id;  // a start and an end each
  // 2 nodes x 8 NICs x 2 directions and 16 GPUs x 2 NVLink directions; the all-to-alls fill a NIC.
  EXPECT_EQ(peak.size(), 2u * 8 * 2 + 16u * 2);
  EXPECT_NEAR(peak["node 0 NIC 0 out"], 100.0, 1e-6);
}

TEST(RecsysCliTest, ShardRanksPlansAndPrintsAPlanThatPredictReads) {
  TempDir dir;
  const std::string plan = dir.file("plan.yaml").string();
  const Result r =
      run({"shard", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--nodes", "2", "--output", plan});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* name :
       {"table_wise", "row_wise", "column_wise", "table_row_wise", "data_parallel",
        "(2D, groups of 8)", "greedy", "hugectr", "torchrec (2D, groups of 8)"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  // TorchRec's planner view of each plan, and which one its estimate would pick.
  EXPECT_NE(r.out.find("torchrec (ms)"), std::string::npos);
  EXPECT_NE(r.out.find("TorchRec's estimate would rank first: "), std::string::npos);
  // Data-parallel copies of 2e8 rows x 128 fp32 (and their Adagrad state) cannot fit in 80 GB.
  EXPECT_NE(r.out.find("has 80.0 GB"), std::string::npos);
  // Ranked by step time: the times in the table never decrease.
  std::istringstream lines(r.out);
  double previous = 0;
  int ranked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("a2a/GPU:", 0) == 0) break;  // the ranking ends; per-GPU statistics follow
    std::istringstream fields(line);
    int rank = 0;
    if (!(fields >> rank) || rank < 1) continue;
    const auto ms_at = line.find("  ", 5 + 44);
    double ms = 0;
    if (std::sscanf(line.c_str() + ms_at, "%lf", &ms) != 1) continue;  // does not fit
    EXPECT_GE(ms, previous) << line;
    previous = ms;
    ++ranked;
  }
  EXPECT_GE(ranked, 11);  // 13 plans, the two data-parallel ones do not fit
  // TorchRec's planner statistics of the printed plan: a line per GPU.
  EXPECT_NE(r.out.find("per-GPU statistics of plan"), std::string::npos);
  EXPECT_NE(r.out.find("HBM (GB)"), std::string::npos);
  const Result predicted = run({"predict", "--job", plan, "--nodes", "2"});
  EXPECT_EQ(predicted.status, 0) << predicted.err;
  // The printed job keeps the original's dataloader and checkpoints.
  const std::string text = read_file(plan);
  EXPECT_NE(text.find("workers_per_gpu: 4"), std::string::npos) << text;
  EXPECT_NE(text.find("mode: async"), std::string::npos) << text;
  EXPECT_NE(text.find("preprocess_time_per_example: 0.5 us"), std::string::npos) << text;
  EXPECT_NE(predicted.out.find("input pipeline (per GPU)"), std::string::npos) << predicted.out;
  EXPECT_NE(predicted.out.find("checkpoints:"), std::string::npos) << predicted.out;
  // The top-ranked plan is the one written, with its cluster and model relative to the file.
  std::istringstream table(r.out);
  std::string first;
  while (std::getline(table, first) && first.rfind("1 ", 0) != 0) {
  }
  const std::string top = first.substr(5, first.find("  ", 5) - 5);
  EXPECT_NE(r.out.find("plan '" + top + "' written to"), std::string::npos) << r.out;
  for (const char* key : {"cluster: ", "model: "}) {
    const auto at = text.find(std::string("\n") + key);
    ASSERT_NE(at, std::string::npos) << key;
    const auto start = at + 1 + std::string(key).size();
    const std::string path = text.substr(start, text.find('\n', start) - start);
    EXPECT_FALSE(fs::path(path).is_absolute()) << path;
    EXPECT_TRUE(fs::exists(dir.file(path))) << path;
  }
}

TEST(RecsysCliTest, WorkedScenarioShowsTheShapeOfThePublishedFigures) {
  // Before: fp32 all-to-all across nodes over 4x 100 Gb/s, unbalanced shards. Publicly reported
  // for such a case: 1.13x at 2 nodes and 1.21x at 4. Asserted: direction and rough size only.
  const auto before = predict_json("configs/jobs/foundation-baseline.yaml", "1,2,4,8")["points"];
  EXPECT_GT(before[1]["speedup"].get<double>(), 0.9);
  EXPECT_LT(before[1]["speedup"].get<double>(), 1.5);
  EXPECT_LT(before[2]["speedup"].get<double>(), 1.8);
  EXPECT_LT(before[3]["efficiency"].get<double>(), 0.3);
  for (int i = 1; i < 4; ++i) {
    // Much of the step is lost to communication (and waiting for the hot shard's sends): 38% at
    // 2 nodes with FBGEMM's measured embedding kernel fractions (the hot shard's kernels now take
    // longer on every GPU count alike), 42% before them.
    EXPECT_GT(share(before[i], "communication_stall") + share(before[i], "load_imbalance"), 0.35);
    const std::string dominant = before[i]["dominant"];
    EXPECT_TRUE(dominant == "communication stall" || dominant == "load imbalance") << dominant;
  }
  // After: fp8, balanced column-wise shards, 2D with the all-to-all inside each node. Publicly
  // reported: 2.0x at 2 nodes, 3.9x at 4 and 7.5x at 8.
  const auto after = predict_json("configs/jobs/foundation-optimized.yaml", "1,2,4,8")["points"];
  EXPECT_GT(after[1]["speedup"].get<double>(), 1.8);
  EXPECT_GT(after[2]["speedup"].get<double>(), 3.3);
  EXPECT_GT(after[3]["speedup"].get<double>(), 6.0);
  for (int i = 1; i < 4; ++i) {
    // A fifth of the step at 8 nodes on EFA at its fitted 0.78 of line rate (the AWS p4de log).
    EXPECT_LT(share(after[i], "communication_stall"), 0.25);
    EXPECT_LT(share(after[i], "load_imbalance"), 0.01);
    // Reported: 2.0 / 1.13 = 1.8x better at 2 nodes; predicted 1.45x (1.91x / 1.32x).
    EXPECT_GT(after[i]["speedup"].get<double>(), 1.4 * before[i]["speedup"].get<double>());
  }
  // Same single-node compute: the changes remove communication, not work.
  EXPECT_NEAR(after[0]["breakdown_s"]["compute"].get<double>(),
              before[0]["breakdown_s"]["compute"].get<double>(),
              0.05 * before[0]["breakdown_s"]["compute"].get<double>());
}

TEST(RecsysCliTest, TheCommunicationStallIsSplitByCollective) {
  // The parts add up to the stall; across nodes the all-to-alls leave some.
  const auto points = predict_json("configs/jobs/dlrm-dcnv2-mlperf.yaml", "1,8")["points"];
  for (const auto& p : points) {
    double sum = 0;
    for (const char* key :
         {"stall_id_all_to_all_s", "stall_embedding_all_to_all_s", "stall_gradient_all_to_all_s",
          "stall_dense_all_reduce_s", "stall_embedding_sync_s"}) {
      ASSERT_TRUE(p.contains(key)) << key;
      EXPECT_GE(p[key].get<double>(), 0.0);
      sum += p[key].get<double>();
    }
    EXPECT_NEAR(sum, p["breakdown_s"]["communication_stall"].get<double>(), 1e-9);
  }
  EXPECT_GT(points[1]["stall_gradient_all_to_all_s"].get<double>(), 0.0);
}

void expect_job_error(const TempDir& dir, const std::string& job, const std::string& location,
                      const std::string& key, const std::string& fragment) {
  const std::string path = dir.write("job.yaml", job);
  const std::string output = dir.file("out.csv").string();
  const Result r = run({"predict", "--job", path, "--nodes", "1", "--output", output});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(path + ":" + location + ": " + key + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(output));
}

TEST(RecsysCliTest, BadJobsAndModelsNameFileLineAndKey) {
  TempDir dir;
  const std::string head =
      "name: j\nmodel: " + kSourceDir + "/configs/models/dlrm-dcnv2.yaml\nbatch_per_gpu: 1024\n";
  expect_job_error(dir,
                   head +
                       "sharding:\n  strategy: plan\n  plan:\n    - {table: cat_99, "
                       "strategy: table_wise, gpus: [0]}\n",
                   "7:7", "sharding.plan[0]", "no table named 'cat_99'");
  expect_job_error(dir,
                   head +
                       "sharding:\n  strategy: plan\n  plan:\n    - {table: cat_3, "
                       "strategy: table_wise, gpus: [8]}\n",
                   "7:7", "sharding.plan[0]", "GPU 8 is not in the sharding group");
  // A model with a table of zero rows, and one with a negative Zipf alpha.
  std::string model = read_file(kSourceDir + "/configs/models/dlrm-dcnv2.yaml");
  const std::string zero = replace(model, "rows: 39060", "rows: 0");
  const std::string model_path = dir.write("model.yaml", zero);
  const std::string job = dir.write("j2.yaml", "name: j\nbatch_per_gpu: 64\n");
  Result r = run({"predict", "--job", job, "--model", model_path, "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(model_path + ":" + location_of(zero, "0, pooling: 2}") +
                       ": embedding.tables[1].rows: "),
            std::string::npos)
      << r.err;
  const std::string negative = replace(model, "alpha: 1.1", "alpha: -1.1");
  dir.write("model.yaml", negative);
  r = run({"predict", "--job", job, "--model", model_path, "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(
      r.err.find(model_path + ":" + location_of(negative, "-1.1") + ": embedding.access.alpha: "),
      std::string::npos)
      << r.err;
}

// --- Beyond the step: check-claim, strong and weak scaling, input stalls, checkpoints ---

nlohmann::json predict_json(const std::vector<std::string>& extra);

TEST(CheckClaimTest, TheMeasurementNotesExamples) {
  Result r = run({"check-claim", "--baseline-nodes", "1", "--nodes", "4", "--speedup", "3.9"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("speedup 3.90x, efficiency 97.50% of ideal (linear scaling: 4.00x)"),
            std::string::npos)
      << r.out;
  r = run({"check-claim", "--nodes", "4", "--speedup", "1.21"});
  EXPECT_NE(r.out.find("efficiency 30.25%"), std::string::npos) << r.out;
  r = run(
      {"check-claim", "--nodes", "8", "--baseline-throughput", "100000", "--throughput", "750000"});
  EXPECT_NE(r.out.find("speedup 7.50x, efficiency 93.75%"), std::string::npos) << r.out;
  r = run({"check-claim", "--run", "100000:10h", "--run", "200000:8h"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("throughput      B / A = 2.00x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time-to-quality A / B = 1.25x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run B needed 1.60x the examples"), std::string::npos) << r.out;
}

TEST(CheckClaimTest, VerdictsAgainstThePrediction) {
  const std::string job = kSourceDir + "/configs/jobs/foundation-baseline.yaml";
  // The poorly scaling job cannot give 3.9x on 4 nodes even with all communication hidden.
  Result r = run(
      {"check-claim", "--nodes", "4", "--speedup", "3.9", "--job", job, "--network", "analytic"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("verdict   optimistic"), std::string::npos) << r.out;
  // Its own predicted speedup is plausible; far below it is pessimistic.
  r = run(
      {"check-claim", "--nodes", "4", "--speedup", "1.5", "--job", job, "--network", "analytic"});
  EXPECT_NE(r.out.find("verdict   plausible"), std::string::npos) << r.out;
  r = run(
      {"check-claim", "--nodes", "4", "--speedup", "1.0", "--job", job, "--network", "analytic"});
  EXPECT_NE(r.out.find("verdict   pessimistic"), std::string::npos) << r.out;
  // Beyond linear is optimistic whatever the cluster.
  r = run({"check-claim", "--nodes", "4", "--speedup", "4.2", "--job",
           kSourceDir + "/configs/jobs/foundation-optimized.yaml", "--network", "analytic"});
  EXPECT_NE(r.out.find("beyond linear scaling"), std::string::npos) << r.out;
}

TEST(CheckClaimTest, SuperlinearClaimsAreFlaggedWithoutACluster) {
  const Result r = run({"check-claim", "--nodes", "2", "--speedup", "2.3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("efficiency 115.00%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning   superlinear: 2.30x on 2x the hardware"), std::string::npos)
      << r.out;
  EXPECT_EQ(run({"check-claim", "--nodes", "2", "--speedup", "1.9"}).out.find("superlinear"),
            std::string::npos);
}

TEST(CheckClaimTest, MeasuredThroughputsAreJudgedAsTheyAre) {
  // The job's own prediction (analytic) at 1 and 4 nodes, read from predict's JSON: a claim of
  // those two throughputs is plausible; the same speedup from a baseline at half its
  // prediction, with the 4-node figure halved too, is judged on the absolute figures and is
  // pessimistic (a slow baseline does not excuse a slow cluster).
  const std::string job = kSourceDir + "/configs/jobs/foundation-optimized.yaml";
  const nlohmann::json p = predict_json({"--job", job, "--nodes", "1,4"});
  const double one = p["points"][0]["throughput_examples_per_s"].get<double>();
  const double four = p["points"][1]["throughput_examples_per_s"].get<double>();
  const auto text = [](double v) { return std::to_string(static_cast<long long>(v)); };
  Result r = run({"check-claim", "--nodes", "4", "--baseline-throughput", text(one), "--throughput",
                  text(four), "--job", job, "--network", "analytic"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("measured  baseline " + text(one) + " ex/s = 100.0% of the predicted"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verdict   plausible"), std::string::npos) << r.out;
  r = run({"check-claim", "--nodes", "4", "--baseline-throughput", text(one / 2), "--throughput",
           text(four / 2), "--job", job, "--network", "analytic"});
  EXPECT_NE(r.out.find("warning   the baseline ran at 50% of its prediction"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verdict   pessimistic: " + text(four / 2) + " ex/s is below the predicted"),
            std::string::npos)
      << r.out;
  // As a bare speedup the same ratio is plausible: nothing says the baseline was slow.
  r = run({"check-claim", "--nodes", "4", "--speedup", std::to_string(four / one), "--job", job,
           "--network", "analytic"});
  EXPECT_NE(r.out.find("verdict   plausible"), std::string::npos) << r.out;
}

TEST(CheckClaimTest, BadInput) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"check-claim", "--speedup", "3.9"},
           {"check-claim", "--nodes", "4", "--speedup", "-1"},
           {"check-claim", "--nodes", "4"},
           {"check-claim", "--run", "100000:10h"},
           {"check-claim", "--run", "100000:-1h", "--run", "200000:8h"},
           {"check-claim", "--run", "100000:10h", "--run", "200000:8h", "--nodes", "4"},
           {"check-claim", "--baseline-nodes", "4", "--nodes", "2", "--speedup", "0.5"},
           {"check-claim", "--run", "1MiB:10h", "--run", "200000:8h"}}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args.back();
    EXPECT_NE(r.err.find("check-claim"), std::string::npos) << r.err;
  }
  EXPECT_NE(run({"check-claim", "--speedup", "3.9"}).err.find("needs the node counts"),
            std::string::npos);
}

nlohmann::json predict_json(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"predict", "--format", "json", "--network", "analytic"};
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = run(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(BeyondTheStepCliTest, StrongScalingKeepsTheGlobalBatchWeakTheBatchPerGpu) {
  const std::string job = kSourceDir + "/configs/jobs/dlrm-dcnv2.yaml";
  const auto strong = predict_json({"--job", job, "--nodes", "1,2,4", "--scaling", "strong"});
  const auto weak = predict_json({"--job", job, "--nodes", "1,2,4", "--scaling", "weak"});
  EXPECT_EQ(strong["scaling"], "strong");
  EXPECT_EQ(weak["scaling"], "weak");
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(strong["points"][i]["global_batch"].get<double>(), 65536.0);
    EXPECT_DOUBLE_EQ(weak["points"][i]["global_batch"].get<double>(), 65536.0 * (1 << i));
  }
  // Strong scaling: the same examples to the target at every node count, so time-to-quality
  // speeds up exactly as throughput.
  for (const auto& p : strong["points"]) {
    EXPECT_NEAR(p["ttq_speedup"].get<double>(), p["speedup"].get<double>(), 1e-12);
  }
  // Weak scaling with the model's critical batch B_noise = 262144: the global batch B needs
  // E_min (1 + B / B_noise) examples, so ttq speedup = speedup (1 + B_1 / B_noise) /
  // (1 + B_N / B_noise).
  const double b_noise = 262144.0;
  for (const auto& p : weak["points"]) {
    const double b = p["global_batch"].get<double>();
    EXPECT_NEAR(p["ttq_speedup"].get<double>(),
                p["speedup"].get<double>() * (1 + 65536.0 / b_noise) / (1 + b / b_noise), 1e-9);
    // Time to quality = E_min (1 + B / B_noise) / throughput, E_min = 3.15e9 at AUC 0.80275.
    EXPECT_NEAR(p["time_to_quality_s"].get<double>(),
                3.15e9 * (1 + b / b_noise) / p["throughput_examples_per_s"].get<double>(), 1e-6);
  }
}

TEST(BeyondTheStepCliTest, SharedFilesystemBecomesTheBottleneck) {
  TempDir dir;
  // The dense model, 1024 examples of 10 KB per GPU and step: 82 MB per node and step. Each node
  // reads at up to 40 GB/s, all of them share 40 GB/s.
  std::string cluster = read_file(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  cluster = replace(cluster, "shared_read_bandwidth: 400 GB/s", "shared_read_bandwidth: 40 GB/s");
  const std::string cluster_path = dir.write("cluster.yaml", cluster);
  const std::string job = dir.write(
      "job.yaml",
      "name: io\nbatch_per_gpu: 1024\ndataloader: {bytes_per_example: 10 KB, workers_per_gpu: "
      "8}\n");
  const auto doc = predict_json({"--cluster", cluster_path, "--job", job, "--nodes", "1,2,4,16"});
  const auto& points = doc["points"];
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(points[i]["breakdown_s"]["input_stall"].get<double>(), 0.0) << i;
  }
  // 16 nodes: 2.5 GB/s each, a batch for each of the 8 GPUs every 8 * 10.24 MB / 2.5 GB/s =
  // 32.768 ms, longer than the step: the input pipeline sets the pace. The 8 workers of a GPU
  // read together and start again a read latency (1 ms) after their reads end, so the storage
  // idles 1 ms per 8 batches: 32.768 + 0.125 ms per step.
  const auto& p16 = points[3];
  EXPECT_NEAR(p16["step_time_s"].get<double>(), 0.032893, 1e-9);
  EXPECT_EQ(p16["dominant"], "input stall");
  EXPECT_EQ(p16["input_pipeline"]["limit"], "shared filesystem");
}

TEST(BeyondTheStepCliTest, CheckpointOverheadIsFoldedIntoThroughput) {
  const auto doc =
      predict_json({"--job", kSourceDir + "/configs/jobs/dlrm-dcnv2.yaml", "--nodes", "1,64"});
  for (const auto& p : doc["points"]) {
    const double step = p["step_time_s"].get<double>();
    const double overhead = p["checkpoint"]["overhead"].get<double>();
    EXPECT_GT(overhead, 0.0);
    // The checkpoint share of the step is overhead / (1 + overhead) of it.
    EXPECT_NEAR(p["breakdown_s"]["checkpoint"].get<double>(), step * overhead / (1 + overhead),
                1e-9);
    EXPECT_NEAR(p["throughput_examples_per_s"].get<double>(),
                p["global_batch"].get<double>() / step,
                1e-6 * p["throughput_examples_per_s"].get<double>());
    // Cluster MTBF = node MTBF (6335 h) / nodes.
    EXPECT_NEAR(p["checkpoint"]["cluster_mtbf_s"].get<double>(),
                6335.0 * 3600 / p["nodes"].get<int>(), 1e-6);
  }
  // More nodes fail more often: more overhead.
  EXPECT_GT(doc["points"][1]["checkpoint"]["overhead"].get<double>(),
            doc["points"][0]["checkpoint"]["overhead"].get<double>());
}

TEST(BeyondTheStepCliTest, BadInputNamesFileLineAndKey) {
  {
    // (expect_config_error uses this test's temporary folder: before `dir` below.)
    std::string cluster = read_file(kSourceDir + "/configs/clusters/dgx-h100.yaml");
    const std::string negative = replace(cluster, "node_mtbf: 6335 h", "node_mtbf: -6335 h");
    expect_config_error(negative, location_of(negative, "-6335 h"), "reliability.node_mtbf",
                        "must be positive");
  }
  TempDir dir;
  const std::string head =
      "name: j\nmodel: " + kSourceDir + "/configs/models/dlrm-dcnv2.yaml\nbatch_per_gpu: 1024\n";
  expect_job_error(dir, head + "checkpoint:\n  interval: 0 min\n", "5:13", "checkpoint.interval",
                   "must be a positive time");
  expect_job_error(dir, head + "target_quality: 0.9\n", "4:17", "target_quality",
                   "cannot reach AUC 0.9");
  const Result r =
      run({"predict", "--job", kSourceDir + "/configs/jobs/dlrm-dcnv2.yaml", "--target", "0.81"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot reach AUC 0.81: the best it knows is 0.80275"), std::string::npos)
      << r.err;
}

// --- Sweeps and --set ---

const std::string kSmallSweep = kSourceDir + "/tests/data/small_sweep.yaml";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  if (!line.empty() && line.back() == ',') fields.push_back("");
  return fields;
}

TEST(SweepTest, PointsAreNumberedWithTheLastAxisFastest) {
  const Result r = run({"sweep", kSmallSweep, "--list"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 12u);  // 3 x 2 x 2
  EXPECT_EQ(lines[0], "0  nodes=1  cluster.nic.bandwidth=100 Gb/s  model.batch_per_gpu=512");
  EXPECT_EQ(lines[1], "1  nodes=1  cluster.nic.bandwidth=100 Gb/s  model.batch_per_gpu=1024");
  EXPECT_EQ(lines[2], "2  nodes=1  cluster.nic.bandwidth=400 Gb/s  model.batch_per_gpu=512");
  EXPECT_EQ(lines[11], "11  nodes=4  cluster.nic.bandwidth=400 Gb/s  model.batch_per_gpu=1024");
}

TEST(SweepTest, RowsAreTheSameForAnyThreadCountAndSpeedupIsOverTheBaseline) {
  const Result one = run({"sweep", kSmallSweep, "--threads", "1"});
  const Result two = run({"sweep", kSmallSweep, "--threads", "2"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out, two.out);
  auto lines = lines_of(one.out);
  ASSERT_EQ(lines.size(), 13u);     // columns, 12 rows: a CSV any reader loads (no comment line)
  lines.insert(lines.begin(), "");  // rows from lines[2], as below
  const auto columns = split_csv(lines[1]);
  EXPECT_EQ(columns.front(), "index");
  auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) -
                                    columns.begin());
  };
  // Row k (nodes 1) and row k + 4 (nodes 2) share NIC and batch: speedup = throughput ratio,
  // efficiency = speedup / 2.
  for (int k = 0; k < 4; ++k) {
    const auto base = split_csv(lines[2 + k]);
    const auto two_nodes = split_csv(lines[6 + k]);
    EXPECT_EQ(base[col("speedup")], "1");
    const double ratio = std::stod(two_nodes[col("throughput_examples_per_s")]) /
                         std::stod(base[col("throughput_examples_per_s")]);
    EXPECT_NEAR(std::stod(two_nodes[col("speedup")]), ratio, 1e-8 * ratio);
    EXPECT_NEAR(std::stod(two_nodes[col("efficiency")]), ratio / 2, 1e-8 * ratio);
  }
  // The batch axis reaches the model: global batch = 8 GPUs x batch per GPU on one node.
  EXPECT_EQ(split_csv(lines[2])[col("global_batch")], "4096");
  EXPECT_EQ(split_csv(lines[3])[col("global_batch")], "8192");
}

TEST(SweepTest, RepeatAddsTheIntervalForAnyThreadCount) {
  // Every GPU's slowdown drawn per run: --repeat 3 adds the runs' mean and 95% half-width to each
  // row, the same bytes with 1 or 2 threads; JSON Lines carry them as "repeated".
  const std::string sweep = kSourceDir + "/tests/data/small_sweep.yaml";
  const std::vector<std::string> args = {"sweep",    sweep,
                                         "--repeat", "3",
                                         "--set",    "cluster.stragglers.distribution=uniform",
                                         "--set",    "cluster.stragglers.max=1.2"};
  std::vector<std::string> one(args), two(args);
  one.insert(one.end(), {"--threads", "1"});
  two.insert(two.end(), {"--threads", "2"});
  const Result a = run(one);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(run(two).out, a.out);
  EXPECT_NE(a.out.find(",runs,throughput_mean,throughput_ci95,"), std::string::npos);
  std::vector<std::string> jsonl(one);
  jsonl.insert(jsonl.end(), {"--format", "jsonl"});
  const Result j = run(jsonl);
  ASSERT_EQ(j.status, 0) << j.err;
  std::istringstream lines(j.out);
  std::string line;
  std::getline(lines, line);  // the header
  std::getline(lines, line);
  const auto row = nlohmann::json::parse(line);
  EXPECT_EQ(row["repeated"]["runs"], 3);
  EXPECT_GT(row["repeated"]["throughput"]["ci95_half_width"].get<double>(), 0);
}

TEST(SweepTest, CsvAndJsonLinesReadBackAlike) {
  // The same sweep written both ways reads back to the same table and plot series: the reader
  // and both writers take their columns from one schema.
  const Result csv = run({"sweep", kSmallSweep, "--format", "csv"});
  const Result jsonl = run({"sweep", kSmallSweep, "--format", "jsonl"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  ASSERT_EQ(jsonl.status, 0) << jsonl.err;
  const ResultSet a = parse_results(csv.out, "a.csv");
  const ResultSet b = parse_results(jsonl.out, "b.jsonl");
  EXPECT_EQ(a.columns, b.columns);
  ASSERT_EQ(a.rows.size(), 12u);
  EXPECT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.series.size(), b.series.size());
  for (std::size_t s = 0; s < a.series.size(); ++s) {
    EXPECT_EQ(a.series[s].label, b.series[s].label);
    ASSERT_EQ(a.series[s].points.size(), b.series[s].points.size());
    for (std::size_t k = 0; k < a.series[s].points.size(); ++k) {
      EXPECT_EQ(a.series[s].points[k].nodes, b.series[s].points[k].nodes);
      // CSV keeps 9 significant digits.
      EXPECT_NEAR(a.series[s].points[k].speedup, b.series[s].points[k].speedup,
                  1e-8 * b.series[s].points[k].speedup);
    }
  }
  // Row 0: 1 node of 8 GPUs at 512 per GPU, its own baseline.
  auto cell = [&](const std::string& column) {
    const auto at = std::find(a.columns.begin(), a.columns.end(), column) - a.columns.begin();
    return a.rows[0][static_cast<std::size_t>(at)];
  };
  EXPECT_EQ(cell("nodes"), "1");
  EXPECT_EQ(cell("global batch"), "4096");
  EXPECT_EQ(cell("speedup"), "1.00x");
}

TEST(SweepTest, ResumeSkipsDoneRowsAndRefusesAnotherSweep) {
  TempDir dir;
  const std::string whole = dir.file("whole.csv").string();
  const std::string parts = dir.file("parts.csv").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "-o", whole}).status, 0);
  ASSERT_EQ(run({"sweep", kSmallSweep, "--sweep-range", "0:5", "-o", parts}).status, 0);
  EXPECT_EQ(lines_of(read_file(parts)).size(), 6u);  // the column line and 5 rows
  // Which sweep it is lives beside it, with how it was made.
  const auto meta = nlohmann::json::parse(read_file(parts + ".meta.json"));
  EXPECT_EQ(meta["trainsim_sweep"], "small");
  EXPECT_EQ(meta["provenance"]["files"][0]["role"], "sweep");
  // An interrupted write: half a row at the end is dropped and that point runs again.
  {
    std::ofstream append(parts, std::ios::app);
    append << "5,2,100 Gb/s,51";
  }
  ASSERT_EQ(run({"sweep", kSmallSweep, "-o", parts}).status, 0);
  EXPECT_EQ(read_file(parts), read_file(whole));
  // The JSON Lines form resumes too.
  const std::string jsonl = dir.file("rows.jsonl").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "--sweep-index", "3", "-o", jsonl}).status, 0);
  ASSERT_EQ(run({"sweep", kSmallSweep, "-o", jsonl}).status, 0);
  const auto rows = lines_of(read_file(jsonl));
  ASSERT_EQ(rows.size(), 13u);
  EXPECT_EQ(nlohmann::json::parse(rows[1])["index"], 3);
  // A damaged row is not resumed into.
  const std::string damaged = dir.file("damaged.csv").string();
  {
    std::ofstream out(damaged);
    const auto whole_lines = lines_of(read_file(whole));
    out << whole_lines[0] << "\n" << whole_lines[1] << "\n" << whole_lines[2] << "\nx7,oops\n";
    std::ofstream(damaged + ".meta.json") << read_file(whole + ".meta.json");
  }
  Result bad = run({"sweep", kSmallSweep, "-o", damaged});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find(damaged + ":4:1: not a row of this sweep"), std::string::npos) << bad.err;
  // The report of a CSV sweep knows its baseline and name from the header.
  const Result page = run({"report", whole});
  ASSERT_EQ(page.status, 0) << page.err;
  EXPECT_NE(page.out.find("trainsim sweep: small"), std::string::npos);
  EXPECT_NE(page.out.find("speedup over 1 node(s)"), std::string::npos);
  // Another sweep (a --set changes every row) into the same file: refused, file untouched.
  const std::string before = read_file(whole);
  const Result other =
      run({"sweep", kSmallSweep, "--set", "cluster.nic.efficiency=0.9", "-o", whole});
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("different sweep"), std::string::npos) << other.err;
  EXPECT_EQ(read_file(whole), before);
}

TEST(SweepTest, SlicesOfAnArrayJobMergeIntoTheWholeSweep) {
  // Three slices in files of their own (as array tasks write them), merged in any order, give the
  // file one run writes, byte for byte, with its metadata; the merged file resumes like any other,
  // and a slice of another sweep is refused.
  TempDir dir;
  const std::string whole = dir.file("whole.csv").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "-o", whole}).status, 0);
  std::vector<std::string> slices;
  for (const char* range : {"0:5", "5:9", "9:12"}) {
    slices.push_back(dir.file(std::string("slice") + range[0] + ".csv").string());
    ASSERT_EQ(run({"sweep", kSmallSweep, "--sweep-range", range, "-o", slices.back()}).status, 0);
  }
  const std::string merged = dir.file("merged.csv").string();
  const Result r =
      run({"sweep", kSmallSweep, "--merge", slices[2], slices[0], slices[1], "-o", merged});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("12 of 12 points"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(merged), read_file(whole));
  EXPECT_EQ(read_file(merged + ".meta.json"), read_file(whole + ".meta.json"));
  // Two slices only: the merged file resumes the missing points (appended after the others;
  // merging it again puts them in order).
  const std::string partial = dir.file("partial.csv").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "--merge", slices[0], slices[2], "-o", partial}).status, 0);
  ASSERT_EQ(run({"sweep", kSmallSweep, "-o", partial}).status, 0);
  auto sorted_lines = [](const std::string& text) {
    auto lines = lines_of(text);
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted_lines(read_file(partial)), sorted_lines(read_file(whole)));
  const std::string ordered = dir.file("ordered.csv").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "--merge", partial, "-o", ordered}).status, 0);
  EXPECT_EQ(read_file(ordered), read_file(whole));
  // JSON Lines merge the same way; another sweep's output does not merge.
  const std::string a = dir.file("a.jsonl").string(), b = dir.file("b.jsonl").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "--sweep-range", "0:6", "-o", a}).status, 0);
  ASSERT_EQ(run({"sweep", kSmallSweep, "--sweep-range", "6:12", "-o", b}).status, 0);
  const std::string both = dir.file("both.jsonl").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "--merge", a, b, "-o", both}).status, 0);
  EXPECT_EQ(lines_of(read_file(both)).size(), 13u);
  const std::string other = dir.file("other.csv").string();
  ASSERT_EQ(run({"sweep", kSmallSweep, "--set", "cluster.nic.efficiency=0.9", "--sweep-index", "0",
                 "-o", other})
                .status,
            0);
  const Result refused =
      run({"sweep", kSmallSweep, "--merge", slices[0], other, "-o", dir.file("x.csv").string()});
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find(other + ":1:1: is not an output of this sweep"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(dir.file("x.csv")));
}

TEST(SweepTest, JsonLinesKeepNumbersAsNumbers) {
  const Result r = run({"sweep", kSmallSweep, "--format", "jsonl", "--sweep-index", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto row = nlohmann::json::parse(lines_of(r.out)[1]);
  EXPECT_TRUE(row["axes"]["nodes"].is_number_integer());
  EXPECT_EQ(row["axes"]["nodes"], 1);
  EXPECT_EQ(row["axes"]["model.batch_per_gpu"], 1024);
  EXPECT_EQ(row["axes"]["cluster.nic.bandwidth"], "100 Gb/s");  // a quantity keeps its unit
  EXPECT_TRUE(row["throughput_examples_per_s"].is_number());
}

TEST(SweepTest, BadSweepFiles) {
  TempDir dir;
  const std::string head = "name: s\nmodel: configs/models/dense-mlp-1b.yaml\nnetwork: analytic\n";
  auto expect_error = [&](const std::string& text, const std::string& location,
                          const std::string& fragment) {
    const std::string path = dir.write("sweep.yaml", text);
    const std::string output = dir.file("out.csv").string();
    const Result r = run({"sweep", path, "-o", output});
    EXPECT_EQ(r.status, 2) << text;
    EXPECT_NE(r.err.find(path + ":" + location), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(output)) << text;
  };
  // A key that does not exist: the axis's line, and the keys that do.
  expect_error(head +
                   "axes:\n  - {key: nodes, values: [1]}\n  - {key: cluster.nic.bandwdth, "
                   "values: [100 Gb/s]}\n",
               "6:5", "did you mean 'bandwidth'? (expected one of: bandwidth, count");
  expect_error(head + "axes:\n  - key: nodes\n    range: {from: 8, to: 1, times: 2}\n", "6:26",
               "the range is empty");
  expect_error(head + "axes:\n  - {key: nodes, values: []}\n", "5:26", "the list is empty");
  expect_error(head + "axes:\n  - {key: gpu.peak, values: [1]}\n", "5:11", "not a sweep key");
  expect_error(head +
                   "combine: zip\naxes:\n  - {key: nodes, values: [1, 2]}\n  - {key: "
                   "cluster.nic.count, values: [1]}\n",
               "7:5", "zipped axes need the same number of values");
  // At the axes list, which lacks it.
  expect_error(head + "axes:\n  - {key: cluster.nic.count, values: [1]}\n", "5:3",
               "a sweep needs a nodes axis");
}

TEST(SweepTest, APointThatCannotRunIsARowWithItsReason) {
  TempDir dir;
  const std::string path = dir.write(
      "sweep.yaml",
      "name: s\nmodel: configs/models/dense-mlp-1b.yaml\nnetwork: analytic\naxes:\n  - {key: "
      "nodes, values: [1, 200]}\n");
  const Result r = run({"sweep", path});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("has 128 nodes"), std::string::npos) << lines[2];
}

TEST(ProvenanceTest, ResultsSayHowTheyWereMade) {
  TempDir dir;
  // SHA-1 as git and sha1sum compute it (the FIPS 180 test vector "abc").
  EXPECT_EQ(file_sha1(dir.write("abc.txt", "abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(file_sha1(dir.file("missing").string()), "");
  // A predict JSON records its settings, seed, arguments (not where its outputs went) and every
  // config file with its hash, and the scenario as simulated (the --set value, not the file's).
  const std::string cluster = dir.write("c.yaml", shipped_cluster());
  const std::string result = dir.file("r.json").string();
  ASSERT_EQ(run({"predict", "--cluster", cluster, "--nodes", "1", "--network", "analytic", "--seed",
                 "7", "--set", "cluster.nic.bandwidth=50Gb/s", "--format", "json", "-o", result})
                .status,
            0);
  const auto p = nlohmann::json::parse(read_file(result))["provenance"];
  EXPECT_EQ(p["command"], "predict");
  EXPECT_EQ(p["seed"], 7);
  EXPECT_EQ(p["settings"], nlohmann::json::array({"cluster.nic.bandwidth=50Gb/s"}));
  EXPECT_EQ(p["arguments"].dump().find("r.json"), std::string::npos);
  EXPECT_EQ(p["files"][0]["role"], "cluster");
  EXPECT_EQ(p["files"][0]["path"], cluster);
  EXPECT_EQ(p["files"][0]["sha1"], file_sha1(cluster));
  EXPECT_EQ(p["files"][1]["role"], "model");
  EXPECT_NE(p["resolved"].get<std::string>().find("bandwidth: 6.25 GB/s"), std::string::npos);
  // The report shows them, and tells when a file has changed since.
  std::ofstream(cluster, std::ios::app) << "# edited\n";
  const Result page = run({"report", result});
  ASSERT_EQ(page.status, 0) << page.err;
  EXPECT_NE(page.out.find("cluster.nic.bandwidth=50Gb/s"), std::string::npos);
  EXPECT_NE(page.out.find("changed since"), std::string::npos);
  EXPECT_NE(page.out.find("the scenario as simulated"), std::string::npos);
  // A CSV result keeps the same beside it, and loads as plain CSV (its first line the columns).
  const std::string csv = dir.file("r.csv").string();
  ASSERT_EQ(run({"predict", "--nodes", "1", "--network", "analytic", "--format", "csv", "-o", csv})
                .status,
            0);
  EXPECT_EQ(read_file(csv).rfind("nodes,gpus,", 0), 0u);
  EXPECT_EQ(nlohmann::json::parse(read_file(csv + ".meta.json"))["provenance"]["command"],
            "predict");
}

TEST(TorchrecTest, APlanAndItsTablesRoundTripInTorchrecTerms) {
  // shard writes its plan as a job and in TorchRec's terms; a model reading the TorchRec table
  // list and a job reading the TorchRec plan predict the same step as the emitted job, and write
  // the same plan and tables back.
  TempDir dir;
  const std::string plan = dir.file("plan.json").string();
  const std::string emitted = dir.file("job.yaml").string();
  Result r = run({"shard", "--job", kSourceDir + "/configs/jobs/dlrm-dcnv2-mlperf.yaml", "--nodes",
                  "2", "--torchrec", plan, "-o", emitted});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto first = nlohmann::json::parse(read_file(plan));
  ASSERT_EQ(first["tables"].size(), 26u);
  EXPECT_EQ(first["tables"][20]["name"], "cat_20");
  EXPECT_EQ(first["tables"][20]["num_embeddings"], 40000000);
  EXPECT_EQ(first["tables"][20]["pooling_factor"], 100.0);
  const auto& cat_5 = first["plan"]["embedding_bag_collection"]["cat_5"];  // 3 rows: replicated
  EXPECT_EQ(cat_5["sharding_type"], "data_parallel");
  EXPECT_EQ(cat_5["compute_kernel"], "dense");
  EXPECT_EQ(cat_5["ranks"].size(), 16u);
  // The model with its tables from the TorchRec list; the job with its plan from the file.
  std::string model = read_file(kSourceDir + "/configs/models/dlrm-dcnv2.yaml");
  const auto tables_at = model.find("  tables:\n");
  const auto tables_end = model.find("\nbottom_mlp:");
  ASSERT_NE(tables_at, std::string::npos);
  model = model.substr(0, tables_at) + "  tables: plan.json" + model.substr(tables_end);
  const std::string model_file = dir.write("model.yaml", model);
  std::string job;
  std::istringstream lines(read_file(emitted));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("model:", 0) == 0) line = "model: model.yaml";
    if (line == "  plan:") line = "  torchrec_plan: plan.json";
    if (line.rfind("    - {table:", 0) == 0) continue;
    job += line + "\n";
  }
  const std::string job_file = dir.write("torchrec-job.yaml", job);
  const auto step = [&](const std::string& file) {
    const Result p = run(
        {"predict", "--job", file, "--nodes", "2", "--network", "analytic", "--format", "json"});
    EXPECT_EQ(p.status, 0) << p.err;
    return nlohmann::json::parse(p.out)["points"][0]["step_time_s"].get<double>();
  };
  EXPECT_EQ(step(job_file), step(emitted));
  const std::string again = dir.file("again.json").string();
  r = run({"shard", "--job", job_file, "--nodes", "2", "--emit", "job", "--torchrec", again});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto second = nlohmann::json::parse(read_file(again));
  EXPECT_EQ(second["plan"], first["plan"]);
  EXPECT_EQ(second["tables"], first["tables"]);
  // Bad plans name their file, line and key.
  const std::string bad = dir.write(
      "bad.json", "{\"m\": {\"cat_0\": {\"sharding_type\": \"sideways\", \"ranks\": [0]}}}");
  const std::string bad_job = dir.write(
      "bad-job.yaml", "name: b\nmodel: model.yaml\ncluster: " + kSourceDir +
                          "/configs/clusters/dgx-h100.yaml\nglobal_batch: 8192\nsharding:\n"
                          "  torchrec_plan: bad.json\n");
  r = run({"predict", "--job", bad_job, "--nodes", "1", "--network", "analytic"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("sharding_type: must be"), std::string::npos) << r.err;
}

TEST(SetTest, PredictTakesSettings) {
  const auto base = predict_json({"--nodes", "1,2"});
  const auto slow = predict_json({"--nodes", "1,2", "--set", "cluster.nic.bandwidth=100Gb/s"});
  EXPECT_LT(slow["points"][1]["speedup"].get<double>(), base["points"][1]["speedup"].get<double>());
  const auto big = predict_json({"--nodes", "1", "--set", "model.batch_per_gpu=2048"});
  EXPECT_DOUBLE_EQ(big["points"][0]["global_batch"].get<double>(), 16384.0);
  Result r = run({"predict", "--set", "cluster.nic.bandwdth=100Gb/s"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set: cluster.nic.bandwdth=100Gb/s: unknown key; did you mean "
                       "'bandwidth'?"),
            std::string::npos)
      << r.err;
  r = run({"predict", "--set", "nic.bandwidth=100Gb/s"});
  EXPECT_EQ(r.status, 2);
  r = run({"predict", "--set", "cluster.nic.bandwidth"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("expected KEY=VALUE"), std::string::npos) << r.err;
  r = run({"predict", "--set", "cluster.nic.bandwidth=[1,"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set: cluster.nic.bandwidth=[1,: the value is not valid YAML"),
            std::string::npos)
      << r.err;
  // A compute format the GPU has no peak for, whichever kind of model.
  r = run({"predict", "--job", kSourceDir + "/configs/jobs/foundation-baseline.yaml", "--set",
           "model.precision.compute=fp8", "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set: model.precision.compute=fp8: the GPU of cluster "
                       "'cloud-a100-4x100g' (A100 SXM4 80GB"),
            std::string::npos)
      << r.err;
  r = run({"predict", "--cluster", kSourceDir + "/configs/clusters/cloud-a100-4x100g.yaml", "--set",
           "model.compute_dtype=fp8", "--nodes", "1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("has no peak_flops for fp8"), std::string::npos) << r.err;
  // A target quality without a convergence model to reach it.
  r = run({"predict", "--nodes", "1", "--target", "0.8"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("needs the model's convergence section"), std::string::npos) << r.err;
}

// --- Capacity planning ---

double throughput_at(const std::vector<std::string>& extra, int nodes) {
  std::vector<std::string> args = {"--nodes", std::to_string(nodes)};
  args.insert(args.end(), extra.begin(), extra.end());
  return predict_json(args)["points"][0]["throughput_examples_per_s"].get<double>();
}

TEST(PlanTest, SmallestNodeCountMeetingTheTargetAndTheCheapestCluster) {
  const std::string job = kSourceDir + "/configs/jobs/foundation-optimized.yaml";
  const std::string cloud = kSourceDir + "/configs/clusters/cloud-a100-4x100g.yaml";
  const std::string dgx = kSourceDir + "/configs/clusters/dgx-a100.yaml";
  const Result r = run({"plan", "--job", job, "--cluster", cloud, "--cluster", dgx,
                        "--target-throughput", "500000", "--price-per-node-hour", "32",
                        "--price-per-node-hour", "40", "--network", "analytic"});
  ASSERT_EQ(r.status, 0) << r.err;
  // Read the smallest counts back and check them against predict: n meets, n - 1 does not.
  std::vector<int> smallest;
  for (const std::string& line : lines_of(r.out)) {
    if (line.rfind("smallest: ", 0) == 0) smallest.push_back(std::stoi(line.substr(10)));
  }
  ASSERT_EQ(smallest.size(), 2u) << r.out;
  const std::vector<std::string> clusters = {cloud, dgx};
  for (int c = 0; c < 2; ++c) {
    const std::vector<std::string> extra = {"--job", job, "--cluster", clusters[c]};
    EXPECT_GE(throughput_at(extra, smallest[c]), 500000.0) << c;
    EXPECT_LT(throughput_at(extra, smallest[c] - 1), 500000.0) << c;
  }
  // Cost per hour = nodes x price: the cheaper of the two is named.
  const double cloud_cost = smallest[0] * 32.0, dgx_cost = smallest[1] * 40.0;
  const std::string cheapest = cloud_cost <= dgx_cost ? "cloud-a100-4x100g" : "dgx-a100";
  EXPECT_NE(r.out.find("cheapest: " + cheapest), std::string::npos) << r.out;
}

TEST(PlanTest, DeadlineUsesTimeToQuality) {
  const std::string job = kSourceDir + "/configs/jobs/dlrm-dcnv2.yaml";
  Result r = run({"plan", "--job", job, "--deadline", "1", "--network", "analytic"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("smallest: 1 node(s)"), std::string::npos) << r.out;
  // Strong scaling with a convergence curve given on the command line: the answer must meet the
  // deadline, and no smaller count may (--scan tries every count).
  const std::string foundation = kSourceDir + "/configs/jobs/foundation-optimized.yaml";
  const std::vector<std::string> curve = {
      "--set", "model.convergence.metric=AUC",
      "--set", "model.convergence.critical_batch=262144",
      "--set", "model.convergence.curve=[{quality: 0.8, examples: 2.1e8}]",
      "--set", "model.convergence.target=0.8"};
  std::vector<std::string> args = {"--job", foundation, "--nodes", "1-8", "--scaling", "strong"};
  args.insert(args.end(), curve.begin(), curve.end());
  const auto doc = predict_json(args);
  std::vector<double> ttq;
  for (const auto& p : doc["points"]) ttq.push_back(p["time_to_quality_s"].get<double>() / 3600);
  const double deadline = (*std::min_element(ttq.begin(), ttq.end()) + ttq[0]) / 2;
  ASSERT_LT(deadline, ttq[0]);  // one node misses it
  std::vector<std::string> plan = {
      "plan",      "--job",    foundation,    "--deadline", std::to_string(deadline),
      "--network", "analytic", "--max-nodes", "8",          "--scan",
      "--scaling", "strong"};
  plan.insert(plan.end(), curve.begin(), curve.end());
  r = run(plan);
  ASSERT_EQ(r.status, 0) << r.err;
  int smallest = 0;
  for (const std::string& line : lines_of(r.out)) {
    if (line.rfind("smallest: ", 0) == 0) smallest = std::stoi(line.substr(10));
  }
  ASSERT_GT(smallest, 1) << r.out;
  EXPECT_LE(ttq[smallest - 1], deadline);
  for (int n = 1; n < smallest; ++n) EXPECT_GT(ttq[n - 1], deadline) << n;
  // Bad input.
  EXPECT_EQ(run({"plan", "--job", job}).status, 2);
  EXPECT_EQ(run({"plan", "--job", job, "--deadline", "1", "--target-throughput", "1"}).status, 2);
  EXPECT_EQ(run({"plan", "--deadline", "1"}).status, 2);  // dense default model: no convergence
}

}  // namespace
}  // namespace trainsim::cli

namespace trainsim::cli {
namespace {

TEST(RecsysCliTest, ShardingOptionSetsTheJobsStrategy) {
  // --sharding NAME is --set job.sharding.strategy=NAME: the same prediction, and its errors are
  // reported at the option.
  const Result a = run({"predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--nodes", "1",
                        "--network", "analytic", "--sharding", "hugectr", "--format", "csv"});
  const Result b =
      run({"predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--nodes", "1", "--network",
           "analytic", "--set", "job.sharding.strategy=hugectr", "--format", "csv"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const Result bad = run({"predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--sharding", "x"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--sharding"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("best, greedy"), std::string::npos) << bad.err;
}

TEST(CompareTest, SeriesSideBySideWithTheirDifferencesFromTheFirst) {
  // Two predictions of the same job, the second on half the NIC bandwidth: compare's figures are
  // the two results' own, and its changes their differences (throughput in %, efficiency in
  // points, times in ms).
  TempDir dir;
  const std::string a = dir.file("a.json").string(), b = dir.file("b.json").string();
  ASSERT_EQ(run({"predict", "--network", "analytic", "--nodes", "1,2", "--format", "json", "-o", a})
                .status,
            0);
  ASSERT_EQ(run({"predict", "--network", "analytic", "--nodes", "1,2", "--format", "json", "--set",
                 "cluster.nic.bandwidth=200Gb/s", "-o", b})
                .status,
            0);
  const auto json_of = [](const std::string& path) {
    return nlohmann::json::parse(read_file(path));
  };
  const nlohmann::json ja = json_of(a), jb = json_of(b);
  const Result r = run({"compare", a, b, "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("nodes,series,label,throughput_examples_per_s,throughput_change,", 0), 0u);
  std::vector<std::vector<std::string>> rows;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (const char ch : line) {
      if (ch == '"')
        quoted = !quoted;
      else if (ch == ',' && !quoted)
        cells.push_back(std::exchange(cell, {}));
      else
        cell += ch;
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 4u);  // nodes 1 and 2, series A and B each
  for (int i = 0; i < 2; ++i) {
    const auto& pa = ja["points"][i];
    const auto& pb = jb["points"][i];
    const auto& ra = rows[2 * i];
    const auto& rb = rows[2 * i + 1];
    EXPECT_EQ(ra[1], "A");
    EXPECT_EQ(rb[1], "B");
    EXPECT_EQ(ra[4], "");  // A has no change from itself
    const double ta = pa["throughput_examples_per_s"].get<double>();
    const double tb = pb["throughput_examples_per_s"].get<double>();
    EXPECT_NEAR(std::stod(rb[3]), tb, 1e-6 * tb);
    EXPECT_NEAR(std::stod(rb[4]), tb / ta - 1.0, 1e-8);
    EXPECT_NEAR(std::stod(rb[6]), pb["efficiency"].get<double>() - pa["efficiency"].get<double>(),
                1e-8);
    // The CSV prints 9 significant digits: within half a unit of the ninth.
    const double step_change = pb["step_time_s"].get<double>() - pa["step_time_s"].get<double>();
    EXPECT_NEAR(std::stod(rb[8]), step_change, 5e-9 * std::abs(step_change));
  }
  // The terminal table names the series and shows the same change in %.
  const Result t = run({"compare", a, b});
  EXPECT_NE(t.out.find("A = a.json"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("B = b.json"), std::string::npos) << t.out;
  const double change = 100.0 * (jb["points"][1]["throughput_examples_per_s"].get<double>() /
                                     ja["points"][1]["throughput_examples_per_s"].get<double>() -
                                 1.0);
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", change);
  EXPECT_NE(t.out.find(text), std::string::npos) << text << "\n" << t.out;
  // One result is not a comparison; report takes several and shows the table.
  EXPECT_EQ(run({"compare", a}).status, 2);
  const Result page = run({"report", a, b});
  ASSERT_EQ(page.status, 0) << page.err;
  EXPECT_NE(page.out.find("<h2>Side by side</h2>"), std::string::npos);
  EXPECT_NE(page.out.find("B: b.json"), std::string::npos);  // the plot's legend
}

// predict --placement: the two jobs of models/scaling/shared_cluster_test.cc from YAML. Each
// job's two-rank ring all-reduce of 100 MB moves S = 100 MB per GPU through 1 GB/s NICs: 100 ms
// alone, after 2 ms of compute and NCCL's latency (microseconds). Sharing leaf1's uplink (1 GB/s
// per direction) with the other job halves its rate: 100 ms more per step.
TEST(PlacementCliTest, ReproducesTheHandWorkedSharing) {
  const std::string placement = kSourceDir + "/tests/data/placement/two-jobs.yaml";
  // Exact max-min (the default quantum of 0.1% of a step moves it by up to 0.2%).
  const Result r =
      run({"predict", "--placement", placement, "--format", "json", "--solve-quantum", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["jobs"].size(), 2u);
  for (const auto& j : doc["jobs"]) {
    const double alone = j["step_time_alone_s"].get<double>();
    const double shared = j["step_time_shared_s"].get<double>();
    EXPECT_GT(alone, 0.102);
    EXPECT_LT(alone, 0.1021);
    EXPECT_NEAR(shared - alone, 0.100, 1e-8) << j["name"];
    EXPECT_NEAR(j["slowdown"].get<double>(), shared / alone, 1e-9);
    EXPECT_NEAR(j["throughput_shared"].get<double>(), 200 / shared, 1e-6);
    EXPECT_EQ(j["gpus"], 2);
  }
  EXPECT_EQ(doc["jobs"][0]["slowest_rank"], 1);  // global ranks
  EXPECT_EQ(doc["jobs"][1]["slowest_rank"], 3);
  ASSERT_EQ(doc["collisions"].size(), 2u);
  std::set<std::string> links;
  for (const auto& c : doc["collisions"]) {
    links.insert(c["link"].get<std::string>());
    EXPECT_EQ(c["owners"], nlohmann::json({"a", "b"}));
  }
  EXPECT_EQ(links, (std::set<std::string>{"leaf1 -> spine0", "spine0 -> leaf1"}));

  // The table and the CSV say the same; the same seed gives the same bytes.
  const Result table = run({"predict", "--placement", placement});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("leaf1 -> spine0"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("slowdown"), std::string::npos);
  EXPECT_EQ(run({"predict", "--placement", placement}).out, table.out);
  const Result csv = run({"predict", "--placement", placement, "--format", "csv"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("job,first_node,last_node,gpus,", 0), 0u);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3);
}

TEST(PlacementCliTest, RepeatGivesIntervalsIndependentOfThreads) {
  const std::string placement = kSourceDir + "/tests/data/placement/two-jobs.yaml";
  // Nothing random in these jobs: every run gives the same step, so the interval is 0 wide.
  const Result plain = run(
      {"predict", "--placement", placement, "--format", "json", "--repeat", "3", "--threads", "1"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto doc = nlohmann::json::parse(plain.out);
  for (const auto& j : doc["jobs"]) {
    EXPECT_EQ(j["repeated"]["runs"], 3);
    EXPECT_DOUBLE_EQ(j["repeated"]["slowdown"]["mean"].get<double>(), j["slowdown"].get<double>());
    EXPECT_NEAR(j["repeated"]["slowdown"]["ci95"].get<double>(), 0.0, 1e-12);
  }
  // Slow GPUs drawn per seed: the runs differ, and the same seeds give the same bytes whatever
  // the thread count.
  const std::vector<std::string> drawn = {"predict",
                                          "--placement",
                                          placement,
                                          "--format",
                                          "csv",
                                          "--repeat",
                                          "4",
                                          "--set",
                                          "cluster.stragglers.distribution=exponential",
                                          "--set",
                                          "cluster.stragglers.mean_excess=0.1"};
  auto with_threads = [&](const char* threads) {
    std::vector<std::string> args = drawn;
    args.insert(args.end(), {"--threads", threads});
    return run(args);
  };
  const Result one = with_threads("1"), two = with_threads("2");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.out, two.out);
  EXPECT_NE(one.out.find(",slowdown_mean,slowdown_ci95,"), std::string::npos) << one.out;
  // Each seed drew other slowdowns: the interval of throughput alone has a width.
  const std::string row = one.out.substr(one.out.find('\n') + 1);
  std::vector<std::string> fields;
  for (std::size_t at = 0, next; at <= row.size(); at = next + 1) {
    next = std::min(row.find_first_of(",\n", at), row.size());
    fields.push_back(row.substr(at, next - at));
    if (row[next] == '\n') break;
  }
  ASSERT_EQ(fields.size(), 25u) << row;
  EXPECT_EQ(fields[16], "4");             // runs
  EXPECT_GT(std::stod(fields[18]), 0.0);  // throughput_alone_ci95
}

TEST(PlacementCliTest, TheShippedExampleUsesEveryDocumentedKey) {
  // describe placement's table is written beside the reader, not from it: the example names
  // every key of the table, and loads (the README's golden output runs it in full).
  const std::string text = read_file(kSourceDir + "/configs/placements/two-teams.yaml");
  std::vector<std::string> keys;
  for (const models::ParamDoc& d : models::placement_param_doc().params) keys.push_back(d.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "description", "cluster", "cluster_settings",
                                            "jobs", "jobs[].name", "jobs[].job", "jobs[].model",
                                            "jobs[].nodes", "jobs[].start", "background_traffic"}));
  for (std::string key : keys) {
    if (key.rfind("jobs[].", 0) == 0) key = key.substr(7);
    EXPECT_NE(text.find(key + ":"), std::string::npos) << key;
  }
  const Result r = run({"predict", "--placement", kSourceDir + "/configs/placements/two-teams.yaml",
                        "--steps", "2", "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3);
}

TEST(PlacementCliTest, BadPlacementsNameFileLineAndKey) {
  TempDir dir;
  const std::string data = kSourceDir + "/tests/data/placement/";
  const std::string output = dir.file("out.json").string();
  auto expect_error = [&](const std::string& text, const std::string& where,
                          const std::string& fragment) {
    const std::string file = dir.write("placement.yaml", text);
    const Result r = run({"predict", "--placement", file, "--output", output});
    EXPECT_EQ(r.status, 2) << text;
    EXPECT_NE(r.err.find(file + ":" + where), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(output));
  };
  const std::string head = "name: p\ncluster: " + data + "fat-tree.yaml\njobs:\n";
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 2]}\n" +
                   "  - {name: b, model: " + data + "dense.yaml, nodes: [2, 3]}\n",
               "5:", "nodes 2-3 overlap job 'a' (nodes 0-2)");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [4, 6]}\n",
               "4:", "node 6 is beyond cluster 'test-fat-tree' (6 nodes: 0 to 5)");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 1]}\n" +
                   "  - {name: a, model: " + data + "dense.yaml, nodes: [2, 3]}\n",
               "5:", "a second job named 'a'");
  expect_error(head + "  - {name: a, nodes: [0, 1]}\n", "4:", "or model");
  expect_error(head, "4:", "has no value");
  expect_error(head + "  []\n", "4:", "expected a list of jobs");
  expect_error(head + "  - a\n", "4:", "");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 1], start: 5 GB}\n",
               "4:", "start");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 1], start: 2 d}\n",
               "4:", "at most a day");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 1]}\n" +
                   "background_traffic:\n  - [3, 3, 3, 3, 1]\n",
               "6:", "from a node to itself");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 1], strat: 1}\n",
               "4:", "strat");
  expect_error(head + "  - {name: a, model: " + data + "dense.yaml, nodes: [0, 1]}\n" +
                   "background_traffic:\n  - [0, 1, 2, 3, -5]\n",
               "6:", "must be positive");

  // Options that a placement replaces are usage errors.
  const std::string placement = data + "two-jobs.yaml";
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--nodes", "1,2"},
                                                {"--cluster", data + "fat-tree.yaml"},
                                                {"--network", "analytic"},
                                                {"--set", "job.batch_per_gpu=5"},
                                                {"--trace", "t.json"}}) {
    std::vector<std::string> args = {"predict", "--placement", placement};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << extra[0];
    EXPECT_NE(r.err.find(extra[0]), std::string::npos) << r.err;
  }
  // report and compare read scaling tables; a placement's result is refused by name.
  for (const char* format : {"json", "csv"}) {
    const std::string result = dir.file(std::string("placement.") + format).string();
    ASSERT_EQ(run({"predict", "--placement", placement, "--format", format, "-o", result}).status,
              0);
    const Result r = run({"compare", result, result});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("a predict --placement result"), std::string::npos) << r.err;
  }
  // A cluster setting applies to every job: a 2 GB/s NIC halves the alone transfer.
  const Result faster = run({"predict", "--placement", placement, "--format", "json", "--set",
                             "cluster.nic.bandwidth=2GB/s"});
  ASSERT_EQ(faster.status, 0) << faster.err;
  const auto doc = nlohmann::json::parse(faster.out);
  // 2 ms of compute, microseconds of NCCL latency, 100 MB at 2 GB/s.
  EXPECT_GT(doc["jobs"][0]["step_time_alone_s"].get<double>(), 0.052);
  EXPECT_LT(doc["jobs"][0]["step_time_alone_s"].get<double>(), 0.0521);
  // --network flow is the placement's model anyway.
  EXPECT_EQ(run({"predict", "--placement", placement, "--network", "flow"}).status, 0);
}

}  // namespace
}  // namespace trainsim::cli
