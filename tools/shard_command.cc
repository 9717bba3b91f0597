// `trainsim shard`: evaluates every applicable sharding strategy for a recommender job (and the
// job's own plan), ranked by predicted step time, and prints the greedy planner's (or the best)
// plan as YAML that `trainsim predict --job` reads.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/config/cluster_config.h"
#include "models/config/job_config.h"
#include "models/config/recsys_config.h"
#include "models/workload/recsys_training.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

struct Candidate {
  models::ShardingPlan plan;
  bool fits = true;
  std::string overflow;
  Time step_time = 0;
  double imbalance = 1.0;
  double max_alltoall_bytes = 0;  // per GPU per step, out or in, forward
  double cross_node_bytes = 0;    // all-to-all bytes crossing nodes per step (forward, whole job)
  double replica_sync_bytes = 0;  // largest per GPU
  double max_memory = 0;
  models::StepBreakdown breakdown;
};

}  // namespace

int run_shard(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("options");
  // clang-format off
  options.add_options()
    ("help,h", "show this help")
    ("cluster", po::value<std::string>(), "cluster spec (default: the job's)")
    ("model", po::value<std::string>(), "recommender model spec (default: the job's)")
    ("job", po::value<std::string>(), "job spec (batch, sharding, communication)")
    ("nodes", po::value<int>()->default_value(1), "nodes to plan for")
    ("network", po::value<std::string>()->default_value("analytic"),
     "network model for ranking the plans: analytic (fast) or flow")
    ("emit", po::value<std::string>()->default_value("greedy"),
     "which plan to print as a job YAML: greedy (the greedy planner's best variant) or best "
     "(the top-ranked plan that fits)")
    ("output,o", po::value<std::string>(),
     "write that plan, as a job YAML, to FILE (default: print it)");
  // clang-format on
  const po::variables_map vm = parse_options(args, options, "shard");
  if (vm.count("help")) {
    out << "usage: trainsim shard --job FILE [--cluster FILE] [--model FILE] [--nodes N]\n\n"
           "Evaluates every applicable sharding strategy for the job's recommender on N nodes\n"
           "(table-wise, row-wise, column-wise, table-row-wise, data-parallel, each also in 2D\n"
           "with one node per group when N > 1, the greedy planner, and the job's own plan),\n"
           "ranked by predicted step time, with the load imbalance (largest lookup load over the\n"
           "mean), the all-to-all bytes per GPU and crossing nodes, the replica all-reduce bytes\n"
           "and memory against HBM. Then prints the greedy planner's plan (or, with --emit best,\n"
           "the top-ranked plan) as a job YAML for `predict --job`.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  if (!vm.count("job")) throw UsageError("shard: give --job FILE");
  const std::string emit = vm["emit"].as<std::string>();
  if (emit != "greedy" && emit != "best") throw UsageError("--emit must be greedy or best");
  const models::NetworkModel network_model =
      parse_choice(vm, "network", models::network_model_names());
  const std::string network(models::network_model_names().name(network_model));
  const models::JobSpec job =
      models::load_job_spec(resolve_config_path(vm["job"].as<std::string>()));
  const std::string cluster_path =
      vm.count("cluster") ? vm["cluster"].as<std::string>() : job.cluster;
  const std::string model_path = vm.count("model") ? vm["model"].as<std::string>() : job.model;
  if (cluster_path.empty()) throw UsageError("shard: give --cluster FILE (the job names none)");
  if (model_path.empty()) throw UsageError("shard: give --model FILE (the job names none)");
  const models::ClusterSpec cluster = models::load_cluster_spec(resolve_config_path(cluster_path));
  const models::ModelSpec loaded = models::load_model_spec(resolve_config_path(model_path));
  const auto* model = std::get_if<models::RecsysModelSpec>(&loaded);
  if (!model)
    throw UsageError("shard: model '" + models::model_name(loaded) + "' has no embedding tables");
  const int nodes = vm["nodes"].as<int>();
  if (nodes < 1 || nodes > cluster.nodes) {
    throw UsageError("--nodes " + std::to_string(nodes) + ": cluster '" + cluster.name + "' has " +
                     std::to_string(cluster.nodes) + " nodes");
  }
  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());

  const models::ShardingContext context = models::recsys_context(cluster, *model, job, nodes);
  std::vector<models::ShardingPlan> plans;
  std::vector<int> groups = {context.world};
  if (nodes > 1) groups.push_back(cluster.gpus_per_node);
  for (const int group : groups) {
    for (const models::ShardingStrategy s : models::all_strategies()) {
      if (s == models::ShardingStrategy::kTableRowWise && group <= cluster.gpus_per_node) continue;
      plans.push_back(models::uniform_plan(s, context, group, job.hot_rows));
    }
    plans.push_back(models::greedy_plan(context, group, job.hot_rows));
  }
  if (job.sharding == "plan" || !job.plan.empty()) {
    plans.push_back(models::resolve_sharding(job, context));
    plans.back().name = "the job's plan";
  }

  models::StepSimulationOptions sim;
  sim.network = network_model;
  std::vector<Candidate> candidates;
  for (const auto& plan : plans) {
    Candidate c;
    c.plan = plan;
    models::ShardCosts costs;
    try {
      costs = models::compute_shard_costs(plan, context);
    } catch (const models::ConfigError& e) {
      c.fits = false;
      c.overflow = e.message();
      candidates.push_back(c);
      continue;
    }
    const auto overflows = models::memory_overflows(costs, cluster.gpu);
    c.imbalance = costs.imbalance();
    for (std::size_t a = 0; a < costs.ranks.size(); ++a) {
      double sent = 0.0, received = 0.0;
      for (std::size_t b = 0; b < costs.ranks.size(); ++b) {
        sent += costs.embedding_bytes[a][b];
        received += costs.embedding_bytes[b][a];
        if (a / cluster.gpus_per_node != b / cluster.gpus_per_node)
          c.cross_node_bytes += costs.embedding_bytes[a][b];
      }
      c.max_alltoall_bytes = std::max({c.max_alltoall_bytes, sent, received});
      c.replica_sync_bytes = std::max(c.replica_sync_bytes, costs.ranks[a].replica_sync_bytes);
      c.max_memory = std::max(c.max_memory, costs.ranks[a].memory_bytes());
    }
    if (!overflows.empty()) {
      c.fits = false;
      c.overflow = overflows.front();
    } else {
      const auto result =
          models::simulate_recsys_training(cluster, *model, job, nodes, sim, nullptr, &plan);
      c.step_time = result.step_time;
      c.breakdown = result.breakdown;
    }
    candidates.push_back(c);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.fits != b.fits) return a.fits;
                     return a.step_time < b.step_time;
                   });

  std::ostringstream text;
  char line[512];
  text << "sharding plans for " << model->name << " on " << nodes << " node(s) of " << cluster.name
       << " (" << context.world << " GPUs, batch " << context.batch_per_gpu
       << " per GPU), ranked by step time (" << network << " network model)\n\n";
  std::snprintf(line, sizeof line, "%-4s %-44s %10s %10s %10s %12s %12s %12s %10s\n", "rank",
                "plan", "step (ms)", "imbalance", "a2a/GPU", "cross-node", "replica/GPU",
                "memory/GPU", "fits");
  text << line;
  int rank = 0;
  for (const Candidate& c : candidates) {
    std::snprintf(line, sizeof line,
                  "%-4d %-44s %10s %9.2fx %8.1f MB %9.1f MB %9.1f MB %9.1f GB %10s\n", ++rank,
                  c.plan.name.substr(0, 44).c_str(),
                  c.fits ? std::to_string(to_milliseconds(c.step_time)).substr(0, 8).c_str() : "-",
                  c.imbalance, c.max_alltoall_bytes / 1e6, c.cross_node_bytes / 1e6,
                  c.replica_sync_bytes / 1e6, c.max_memory / 1e9, c.fits ? "yes" : "no");
    text << line;
    if (!c.fits) text << "       " << c.overflow << "\n";
  }
  text << "\na2a/GPU: largest forward all-to-all bytes a GPU sends or receives per step (backward: "
          "the same\n"
          "again); cross-node: forward all-to-all bytes crossing nodes per step; replica/GPU: "
          "bytes a GPU\n"
          "all-reduces across replicas per step (2D).\n\n";
  // The best-ranked greedy variant (over all GPUs, or 2D with one node per group), or the best
  // plan.
  const auto chosen = std::find_if(candidates.begin(), candidates.end(), [&](const Candidate& c) {
    return emit == "best" ? c.fits : c.plan.name.rfind("greedy", 0) == 0;
  });
  if (chosen == candidates.end()) throw UsageError("shard: no plan fits in memory");
  const models::ShardingPlan& emitted = chosen->plan;
  const std::string yaml = models::job_yaml_with_plan(
      job, emitted, *model,
      {"Plan '" + emitted.name + "' by trainsim " + std::string(kTrainsimVersion) + " shard for " +
       std::to_string(nodes) + " node(s) of " + cluster.name +
       "; use with: trainsim predict --job THIS_FILE"});
  if (output_file) {
    output_file->stream() << yaml;
    output_file->commit();
    text << "plan '" << emitted.name << "' written to " << vm["output"].as<std::string>() << "\n";
  } else {
    text << "plan '" << emitted.name << "' (trainsim predict --job reads it):\n" << yaml;
  }
  out << text.str();
  return kExitOk;
}

}  // namespace trainsim::cli
