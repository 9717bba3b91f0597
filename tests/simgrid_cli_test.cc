// The SimGrid contention rows from the command line, as a user would run them: every pure max-min
// row of validation/simgrid/results_contention.csv (SimGrid 3.32; the reference's README defines
// the platform) rerun with `trainsim collective` on the shipped platform files
// (validation/simgrid/crossbar.yaml, fattree.yaml with --set for K), the flat (message by
// message) schedules, --with for operations started together and --hot-gpus for the skewed
// all-to-all, and matched within 0.1%: the end of the run, each operation's last rank and the
// all-to-all's mean rank finish.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/simgrid_reference.h"
#include "tools/cli.h"

namespace trainsim::cli {
namespace {

using simgrid::kSimGridDir;
using simgrid::SimGridRow;

void expect_close(double trainsim_us, const std::string& simgrid_s, const std::string& what) {
  ASSERT_FALSE(simgrid_s.empty()) << what;
  const double reference = std::stod(simgrid_s);
  EXPECT_NEAR(trainsim_us * 1e-6 / reference, 1.0, 1e-3)
      << what << ": trainsim " << trainsim_us * 1e-6 << " s, SimGrid " << reference << " s";
}

TEST(SimGridCli, ContentionRowsFromTheCommandLine) {
  int compared = 0;
  for (const SimGridRow& row : simgrid::read_simgrid_csv(kSimGridDir + "results_contention.csv")) {
    if (!simgrid::is_max_min_row(row)) continue;
    const bool crossbar = row.at("fabric") == "crossbar";
    const std::string scenario = row.at("scenario");
    const std::string what = scenario + " " + row.at("fabric") + " K=" + row.at("oversub_K") + " " +
                             row.at("model") + " N=" + row.at("N");
    std::vector<std::string> args = {
        "collective", "--cluster", kSimGridDir + (crossbar ? "crossbar.yaml" : "fattree.yaml"),
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
