// `trainsim plan`: the smallest node count (and the cheapest cluster) that meets a throughput
// target or a time-to-quality deadline, with the table of predictions it used.
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/scaling/scaling_study.h"
#include "tools/cli.h"
#include "tools/report_format.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

po::options_description plan_options() {
  po::options_description o("options");
  // clang-format off
  o.add_options()
    ("help,h", "show this help")
    ("cluster", po::value<std::vector<std::string>>(),
     "cluster spec; repeat to compare clusters (default: the job's)")
    ("model", po::value<std::string>(), "model spec (default: the job's)")
    ("job", po::value<std::string>(), "job spec")
    ("target-throughput", po::value<double>(), "examples/s to reach")
    ("deadline", po::value<double>(),
     "hours to reach the target quality (needs the model's convergence or dataset size)")
    ("price-per-node-hour", po::value<std::vector<double>>(),
     "price of one node for an hour, per --cluster in the same order (or one for all)")
    ("max-nodes", po::value<int>(), "largest node count to consider (default: the cluster's)")
    ("scan", "try every node count up to --max-nodes instead of doubling and bisecting (for "
     "results that do not improve steadily with nodes, e.g. time-to-quality past the critical "
     "batch)");
  // clang-format on
  add_study_options(o);
  return o;
}

struct Row {
  int nodes = 0;
  models::ScalingPoint point;
  bool meets = false;
};

struct ClusterPlan {
  std::string name;
  std::vector<Row> rows;  // ascending node counts
  std::optional<int> smallest;
  double price = std::nan("");
  std::string note;
};

}  // namespace

int run_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  const po::options_description options = plan_options();
  const po::variables_map vm = parse_options(args, options, "plan");
  if (vm.count("help")) {
    out << "usage: trainsim plan --job FILE [--cluster FILE ...] (--target-throughput X | "
           "--deadline HOURS)\n"
           "                     [--price-per-node-hour P ...] [--max-nodes N] [--scan]\n\n"
           "Finds, for each cluster, the smallest node count whose predicted throughput reaches\n"
           "the target (or whose time-to-quality meets the deadline): node counts double until\n"
           "one does, then a binary search between the last two, which assumes more nodes never\n"
           "hurt; --scan tries every count instead. With prices, names the cheapest\n"
           "option: the lowest cost per hour for a throughput target, the lowest total cost to\n"
           "the target quality for a deadline. Prints every prediction it used.\n\n"
        << options
        << "\nExit status: 0 success (also when nothing meets the target), 2 bad input.\n";
    return kExitOk;
  }
  const bool by_throughput = vm.count("target-throughput") > 0;
  const bool by_deadline = vm.count("deadline") > 0;
  if (by_throughput == by_deadline) {
    throw UsageError("plan: give --target-throughput X or --deadline HOURS (one of them)");
  }
  const double goal =
      by_throughput ? vm["target-throughput"].as<double>() : vm["deadline"].as<double>() * 3600.0;
  if (!(goal > 0)) throw UsageError("plan: the target must be positive");
  std::vector<std::string> clusters;
  if (vm.count("cluster")) clusters = vm["cluster"].as<std::vector<std::string>>();
  if (clusters.empty()) clusters.push_back("");  // the job's
  std::vector<double> prices;
  if (vm.count("price-per-node-hour")) prices = vm["price-per-node-hour"].as<std::vector<double>>();
  if (!prices.empty() && prices.size() != 1 && prices.size() != clusters.size()) {
    throw UsageError("plan: give one --price-per-node-hour, or one per --cluster");
  }
  for (const double p : prices) {
    if (!(p > 0)) throw UsageError("plan: --price-per-node-hour must be positive");
  }
  const models::ScalingStudyOptions study = parse_study_options(vm);
  const auto settings = parse_set_options(vm);

  std::vector<ClusterPlan> plans;
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    ConfigFiles files;
    files.cluster = clusters[c];
    if (vm.count("model")) files.model = vm["model"].as<std::string>();
    if (vm.count("job")) files.job = vm["job"].as<std::string>();
    const SimulationInputs in = load_configs(files, settings);
    check_simulation_inputs(in, {1});
    ClusterPlan plan;
    plan.name = in.cluster.name;
    if (!prices.empty()) plan.price = prices.size() == 1 ? prices[0] : prices[c];
    int max_nodes = in.cluster.nodes;
    if (vm.count("max-nodes")) {
      max_nodes = vm["max-nodes"].as<int>();
      if (max_nodes < 1) throw UsageError("plan: --max-nodes must be positive");
      if (max_nodes > in.cluster.nodes) {
        throw UsageError("plan: --max-nodes " + std::to_string(max_nodes) + ": cluster '" +
                         in.cluster.name + "' has " + std::to_string(in.cluster.nodes) + " nodes");
      }
    }
    const int gpn = in.cluster.gpus_per_node;
    const models::BatchScaling batch =
        models::resolve_batch_scaling(in.workload, study.scaling, gpn, gpn);
    const models::QualityTarget target =
        models::resolve_quality_target(in.workload, study.target_quality, study.target_origin);
    if (by_deadline && !target.min_examples) {
      throw UsageError(
          "plan: --deadline needs time-to-quality: the model has no convergence "
          "curve and no dataset.examples (configs/README.md)");
    }
    std::map<int, Row> evaluated;
    auto evaluate = [&](int n) -> const Row& {
      auto it = evaluated.find(n);
      if (it != evaluated.end()) return it->second;
      Row row;
      row.nodes = n;
      row.point = models::simulate_point(in.cluster, in.workload, n, batch.at(n * gpn),
                                         study.simulation, &target);
      row.meets =
          by_throughput ? row.point.throughput >= goal : row.point.time_to_quality_s <= goal;
      return evaluated.emplace(n, row).first->second;
    };
    // Strong scaling cannot spread the global batch below one example per GPU.
    if (batch.strong) {
      max_nodes = std::min<int>(max_nodes, static_cast<int>(batch.global_batch / gpn));
      if (max_nodes < 1) max_nodes = 1;
    }
    int low = 0;  // largest count known to miss
    int high = 0;
    if (vm.count("scan")) {
      for (int n = 1; n <= max_nodes && high == 0; ++n) {
        if (evaluate(n).meets) high = n;
      }
      low = high - 1;
    } else {
      for (int n = 1;; n = std::min(n * 2, max_nodes)) {
        if (evaluate(n).meets) {
          high = n;
          break;
        }
        low = n;
        if (n == max_nodes) break;
      }
    }
    if (high > 0) {
      while (high - low > 1) {
        const int mid = low + (high - low) / 2;
        if (evaluate(mid).meets) {
          high = mid;
        } else {
          low = mid;
        }
      }
      plan.smallest = high;
    } else {
      plan.note =
          std::string(vm.count("scan") ? "no node count" : "none of the node counts tried") +
          " up to " + std::to_string(max_nodes) + " meets the target";
    }
    std::vector<models::ScalingPoint> points;
    for (const auto& [n, row] : evaluated) {
      plan.rows.push_back(row);
      points.push_back(row.point);
    }
    models::fill_speedup_and_efficiency(points);  // over the smallest (1 node)
    for (std::size_t i = 0; i < points.size(); ++i) plan.rows[i].point = points[i];
    plans.push_back(std::move(plan));
  }

  if (!vm.count("scan")) {
    out << "(node counts tried by doubling, then bisecting: assumes more nodes never hurt; "
           "--scan tries every count)\n";
  }
  out << "target   "
      << (by_throughput ? printf_string("%.6g examples/s", goal)
                        : printf_string("time-to-quality within %.4g h", goal / 3600.0))
      << "\n";
  std::optional<std::size_t> best;
  double best_cost = 0;
  for (std::size_t c = 0; c < plans.size(); ++c) {
    const ClusterPlan& p = plans[c];
    out << "\ncluster  " << p.name
        << (std::isnan(p.price) ? "" : printf_string(", %.4g per node-hour", p.price)) << "\n";
    out << "nodes   GPUs  throughput (ex/s)   speedup  efficiency    ttq (h)  meets";
    if (!std::isnan(p.price)) out << "    cost/h  cost to target";
    out << "\n";
    for (const Row& r : p.rows) {
      const auto& pt = r.point;
      char line[256];
      std::snprintf(line, sizeof line, "%5d  %5d  %17.0f  %7.2fx  %9.1f%%  %9s  %5s", r.nodes,
                    pt.gpus, pt.throughput, pt.speedup, 100 * pt.efficiency,
                    std::isnan(pt.time_to_quality_s)
                        ? "-"
                        : printf_string("%.4g", pt.time_to_quality_s / 3600.0).c_str(),
                    r.meets ? "yes" : "no");
      out << line;
      if (!std::isnan(p.price)) {
        const double per_hour = r.nodes * p.price;
        out << printf_string("  %8.2f", per_hour) << "  "
            << (std::isnan(pt.time_to_quality_s)
                    ? std::string("             -")
                    : printf_string("%14.2f", per_hour * pt.time_to_quality_s / 3600.0));
      }
      out << "\n";
    }
    if (p.smallest) {
      out << "smallest: " << *p.smallest << " node(s)\n";
      if (!std::isnan(p.price)) {
        const Row* row = nullptr;
        for (const Row& r : p.rows) {
          if (r.nodes == *p.smallest) row = &r;
        }
        // A throughput target is a rate: compare the cost per hour; a deadline: the total.
        const double cost = by_throughput
                                ? *p.smallest * p.price
                                : *p.smallest * p.price * row->point.time_to_quality_s / 3600.0;
        if (!best || cost < best_cost) {
          best = c;
          best_cost = cost;
        }
      }
    } else {
      out << p.note << "\n";
    }
  }
  if (best) {
    out << "\ncheapest: " << plans[*best].name << " with " << *plans[*best].smallest << " node(s), "
        << printf_string("%.2f", best_cost) << (by_throughput ? " per hour" : " in all") << "\n";
  }
  return kExitOk;
}

}  // namespace trainsim::cli
