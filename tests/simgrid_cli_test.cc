// The SimGrid contention rows from the command line, as a user would run them: every pure max-min
// row of validation/simgrid/results_contention.csv (SimGrid 3.32; the reference's README defines
// the platform) rerun with `trainsim collective` on the shipped platform files
// (validation/simgrid/crossbar.yaml, fattree.yaml with --set for K), the flat (message by
// message) schedules, --with for operations started together and --hot-gpus for the skewed
// all-to-all, and matched within 0.1%: the end of the run, each operation's last rank and the
// all-to-all's mean rank finish.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tools/cli.h"

namespace trainsim::cli {
namespace {

const std::string kDir = std::string(TRAINSIM_SOURCE_DIR) + "/validation/simgrid/";

using Row = std::map<std::string, std::string>;

std::vector<Row> read_csv(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  for (std::string text; std::getline(in, text);) {
    Row row;
    std::stringstream fields(text);
    std::string field;
    for (std::size_t i = 0; i < header.size() && std::getline(fields, field, ',');) {
      row[header[i++]] = field;
    }
    rows.push_back(row);
  }
  return rows;
}

void expect_close(double trainsim_us, const std::string& simgrid_s, const std::string& what) {
  ASSERT_FALSE(simgrid_s.empty()) << what;
  const double reference = std::stod(simgrid_s);
  EXPECT_NEAR(trainsim_us * 1e-6 / reference, 1.0, 1e-3)
      << what << ": trainsim " << trainsim_us * 1e-6 << " s, SimGrid " << reference << " s";
}

TEST(SimGridCli, ContentionRowsFromTheCommandLine) {
  int compared = 0;
  for (const Row& row : read_csv(kDir + "results_contention.csv")) {
    const bool crossbar = row.at("fabric") == "crossbar";
    const std::string scenario = row.at("scenario");
    // Pure max-min rows, as in simgrid_check_test: the crossbar, the fat-tree's maxmin model, and
    // the lone ring on the fat-tree (one flow per link at a time).
    const bool maxmin = row.at("model") == "maxmin" || crossbar ||
                        (scenario == "ring" && row.at("model") == "ideal");
    if (!maxmin || row.at("variant") != "base" || row.at("status") != "ok") continue;
    const std::string what = scenario + " " + row.at("fabric") + " K=" + row.at("oversub_K") + " " +
                             row.at("model") + " N=" + row.at("N");
    std::vector<std::string> args = {
        "collective", "--cluster", kDir + (crossbar ? "crossbar.yaml" : "fattree.yaml"),
        "--nodes",    row.at("N"), "--algo",
        "flat",       "--format",  "json"};
    if (!crossbar) {
      args.insert(args.end(), {"--set", "cluster.network.oversubscription=" + row.at("oversub_K")});
    }
    const std::string ring_bytes = row.at("ring_bytes");
    const std::string a2a_bytes = row.at("a2a_bytes");
    const bool ring = scenario == "ring" || scenario == "ring_a2a";
    if (ring) {
      args.insert(args.end(), {"--op", "all_reduce", "-b", ring_bytes, "-e", ring_bytes});
      if (scenario == "ring_a2a")
        args.insert(args.end(), {"--with", "alltoall:" + a2a_bytes + ":flat"});
    } else {
      args.insert(args.end(), {"--op", "alltoall", "-b", a2a_bytes, "-e", a2a_bytes});
      if (scenario == "a2a_skew") {
        args.insert(args.end(), {"--hot-gpus", "local:0", "--hot-factor", row.at("hot_factor")});
      }
    }
    std::ostringstream out;
    std::ostringstream err;
    ASSERT_EQ(run_cli(args, out, err), 0) << what << ": " << err.str();
    const auto doc = nlohmann::json::parse(out.str());
    ASSERT_EQ(doc["rows"].size(), 1u) << what;
    const auto& result = doc["rows"][0];
    double end_us = result["time_us"].get<double>();
    if (scenario == "ring_a2a") {
      const auto& a2a = result["with"][0];
      end_us = std::max(end_us, a2a["time_us"].get<double>());
      expect_close(a2a["time_us"].get<double>(), row.at("a2a_time_s"), what + " a2a");
      expect_close(a2a["mean_rank_finish_us"].get<double>(), row.at("a2a_mean_finish_s"),
                   what + " a2a mean finish");
    }
    expect_close(end_us, row.at("sim_time_s"), what + " end");
    if (ring) {
      expect_close(result["time_us"].get<double>(), row.at("ring_time_s"), what + " ring");
    } else {
      expect_close(result["time_us"].get<double>(), row.at("a2a_time_s"), what + " a2a");
      expect_close(result["mean_rank_finish_us"].get<double>(), row.at("a2a_mean_finish_s"),
                   what + " a2a mean finish");
    }
    ++compared;
  }
  EXPECT_EQ(compared, 37);  // every max-min row of the file
}

}  // namespace
}  // namespace trainsim::cli
