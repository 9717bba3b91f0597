// `trainsim shard`: evaluates every applicable sharding strategy for a recommender job (and the
// job's own plan), ranked by predicted step time (models/workload/plan_search), and prints the
// top-ranked (or the greedy planner's) plan as YAML that `trainsim predict --job` reads.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/config/cluster_config.h"
#include "models/config/job_config.h"
#include "models/config/recsys_config.h"
#include "models/scenario/scenario.h"
#include "models/sharding/torchrec_estimator.h"
#include "models/workload/plan_search.h"
#include "models/workload/recsys_training.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/report_format.h"
#include "tools/torchrec_plan.h"
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
  double max_host_bytes = 0;       // rows and state a GPU keeps in host memory
  double max_host_link_bytes = 0;  // a GPU's host-link traffic per step
  models::StepBreakdown breakdown;
  models::ShardCosts costs;
};

using Row = std::span<const models::ByteMatrix::Entry>;

// A rank's row of the table-row-wise partial sums (none without such tables).
Row partials_of(const models::ShardCosts& costs, int rank) {
  return costs.partial_bytes.empty() ? Row() : costs.partial_bytes.row(rank);
}

// Two rows summed peer by peer in ascending order, the first's bytes before the second's; the
// second's pair with `self` is left out, and the first's too when `skip_self_first`.
double pairwise_sum(Row first, Row second, int self, bool skip_self_first) {
  double sum = 0.0;
  std::size_t i = 0, j = 0;
  while (i < first.size() || j < second.size()) {
    const int peer = j == second.size() || (i < first.size() && first[i].to <= second[j].to)
                         ? first[i].to
                         : second[j].to;
    if (i < first.size() && first[i].to == peer) {
      if (!(skip_self_first && peer == self)) sum += first[i].bytes;
      ++i;
    }
    if (j < second.size() && second[j].to == peer) {
      if (peer != self) sum += second[j].bytes;
      ++j;
    }
  }
  return sum;
}

}  // namespace

// TorchRec's planner statistics (torchrec/distributed/planner/stats.py, EmbeddingStats) for
// one plan: per GPU, the HBM and host memory it uses, TorchRec's estimate and trainsim's
// embedding time, the ids it takes in and the pooled vectors it sends out per step, and its
// shards by sharding type.
void write_rank_stats(std::ostream& out, const Candidate& c, const models::ShardingContext& context,
                      const models::TorchrecTopology& torchrec,
                      const models::ClusterSpec& cluster) {
  const std::vector<models::TorchrecPerf> perf =
      models::torchrec_estimate(c.plan, context, torchrec);
  const auto short_name = [](models::ShardingStrategy s) {
    switch (s) {
      case models::ShardingStrategy::kTableWise:
        return "TW";
      case models::ShardingStrategy::kRowWise:
        return "RW";
      case models::ShardingStrategy::kColumnWise:
        return "CW";
      case models::ShardingStrategy::kTableRowWise:
        return "TWRW";
      case models::ShardingStrategy::kTableColumnWise:
        return "TWCW";
      case models::ShardingStrategy::kGridShard:
        return "GRID";
      case models::ShardingStrategy::kDataParallel:
        return "DP";
    }
    return "?";
  };
  const int world = static_cast<int>(c.costs.ranks.size());
  const int group = c.plan.group_size > 0 ? c.plan.group_size : world;
  char line[512];
  out << "per-GPU statistics of plan '" << c.plan.name
      << "' (as TorchRec's planner prints them; perf: TorchRec's estimate and trainsim's lookup "
         "and update):\n";
  std::snprintf(line, sizeof line, "%5s %16s %10s %15s %15s %11s %12s  %s\n", "GPU", "HBM (GB)",
                "DDR (GB)", "torchrec (ms)", "trainsim (ms)", "input (MB)", "output (MB)",
                "shards");
  out << line;
  // What every GPU receives: the id matrix by receiver.
  const models::ByteMatrix ids_in = c.costs.id_bytes.transposed();
  for (int r = 0; r < world; ++r) {
    const models::RankLoad& l = c.costs.ranks[r];
    std::map<std::string, int> shards;
    for (const models::TablePlacement& p : c.plan.tables) {
      for (const int g : p.ranks) {
        if (g == r % group) ++shards[short_name(p.strategy)];
      }
    }
    std::string list;
    for (const auto& [name, count] : shards) {
      list += (list.empty() ? "" : ", ") + name + ": " + std::to_string(count);
    }
    double input = 0;
    for (const models::ByteMatrix::Entry& e : ids_in.row(r)) {
      if (e.to != r) input += e.bytes;
    }
    const double output = pairwise_sum(c.costs.embedding_bytes.row(r), partials_of(c.costs, r), r,
                                       /*skip_self_first=*/true);
    const double hbm = l.memory_bytes();
    const double estimate = r % group < static_cast<int>(perf.size()) ? perf[r % group].total() : 0;
    std::snprintf(line, sizeof line, "%5d %8.1f (%3.0f%%) %10.1f %15.3f %15.3f %11.1f %12.1f  %s\n",
                  r, hbm / 1e9, 100 * hbm / cluster.gpu.hbm_capacity_bytes, l.host_bytes / 1e9,
                  estimate * 1e3, models::embedding_seconds(l) * 1e3, input / 1e6, output / 1e6,
                  list.c_str());
    out << line;
  }
  out << "input: ids a GPU receives per step; output: pooled vectors (and partial sums) it sends; "
         "shards by\nTorchRec's sharding types (TW, RW, CW, TWRW, TWCW, GRID, DP).\n\n";
}

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
    ("emit", po::value<std::string>()->default_value("best"),
     "which plan to print as a job YAML: best (the top-ranked plan that fits), greedy (the "
     "greedy planner's best variant) or job (the job's own plan)")
    ("output,o", po::value<std::string>(),
     "write that plan, as a job YAML, to FILE (default: print it)")
    ("torchrec", po::value<std::string>(),
     "also write that plan in TorchRec's terms to FILE (JSON: the tables as EmbeddingBagConfig "
     "entries, the plan as a ShardingPlan; a model's embedding.tables and a job's "
     "sharding.torchrec_plan read it)");
  // clang-format on
  const po::variables_map vm = parse_options(args, options, "shard");
  if (vm.count("help")) {
    out << "usage: trainsim shard --job FILE [--cluster FILE] [--model FILE] [--nodes N]\n\n"
           "Evaluates every applicable sharding strategy for the job's recommender on N nodes\n"
           "(table-wise, row-wise, column-wise, table-row-wise, table-column-wise, grid,\n"
           "data-parallel, the greedy planner, HugeCTR's and TorchRec's, each also in 2D with one\n"
           "node per group when N > 1, and the job's own plan),\n"
           "ranked by predicted step time, with the load imbalance (largest lookup load over the\n"
           "mean), the all-to-all bytes per GPU and crossing nodes, the replica all-reduce bytes\n"
           "and memory against HBM (and, for tables in host memory, kept there by the job or\n"
           "moved there by a planner because no plan fits in HBM, what the top plan keeps and\n"
           "moves there). Then prints, for the top-ranked plan (or, with --emit,\n"
           "the greedy planner's or the job's own), per-GPU statistics as TorchRec's planner\n"
           "prints them, and the plan as a job YAML for `predict --job`: the plan names the\n"
           "GPUs of its sharding group, so it applies at every node count whose GPUs the group\n"
           "divides, and with -o its cluster and model paths are written relative to the file.\n"
           "--torchrec FILE writes the plan and the tables in TorchRec's terms as well\n"
           "(ShardingPlan, EmbeddingBagConfig), which a job and a model read back.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  if (!vm.count("job")) throw UsageError("shard: give --job FILE");
  const std::string emit = vm["emit"].as<std::string>();
  if (emit != "greedy" && emit != "best" && emit != "job") {
    throw UsageError("--emit must be best, greedy or job");
  }
  const models::NetworkModel network_model =
      parse_choice(vm, "network", models::network_model_names());
  const std::string network(models::network_model_names().name(network_model));
  const models::JobSpec job =
      models::load_job_spec(resolve_config_path(vm["job"].as<std::string>()));
  const std::string cluster_path = vm.count("cluster")
                                       ? vm["cluster"].as<std::string>()
                                       : models::job_relative_path(job, job.cluster);
  const std::string model_path =
      vm.count("model") ? vm["model"].as<std::string>() : models::job_relative_path(job, job.model);
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
  std::unique_ptr<AtomicOutputFile> torchrec_file;
  if (vm.count("torchrec"))
    torchrec_file = std::make_unique<AtomicOutputFile>(vm["torchrec"].as<std::string>());

  const models::ShardingContext context = models::recsys_context(cluster, *model, job, nodes);
  models::StepSimulationOptions sim;
  sim.network = network_model;
  std::vector<Candidate> candidates;
  for (models::RankedPlan& r : models::rank_sharding_plans(cluster, *model, job, nodes, sim)) {
    Candidate c;
    c.plan = std::move(r.plan);
    c.fits = r.fits;
    c.overflow = r.overflow;
    c.step_time = r.step_time;
    c.breakdown = r.breakdown;
    const models::ShardCosts& costs = r.costs;
    if (!costs.ranks.empty()) c.imbalance = costs.imbalance();
    // Vectors by receiver, and the table-row-wise partial sums (inside nodes) both ways.
    const models::ByteMatrix embeddings_in = costs.embedding_bytes.transposed();
    const models::ByteMatrix partials_in = costs.partial_bytes.transposed();
    for (std::size_t i = 0; i < costs.ranks.size(); ++i) {
      const int a = static_cast<int>(i);
      const double sent = pairwise_sum(costs.embedding_bytes.row(a), partials_of(costs, a), a,
                                       /*skip_self_first=*/false);
      const double received =
          pairwise_sum(embeddings_in.row(a), partials_in.empty() ? Row() : partials_in.row(a), a,
                       /*skip_self_first=*/false);
      for (const models::ByteMatrix::Entry& e : costs.embedding_bytes.row(a)) {
        if (a / cluster.gpus_per_node != e.to / cluster.gpus_per_node)
          c.cross_node_bytes += e.bytes;
      }
      c.max_alltoall_bytes = std::max({c.max_alltoall_bytes, sent, received});
      c.replica_sync_bytes = std::max(c.replica_sync_bytes, costs.ranks[i].replica_sync_bytes);
      c.max_memory = std::max(c.max_memory, costs.ranks[i].memory_bytes());
      c.max_host_bytes = std::max(c.max_host_bytes, costs.ranks[i].host_bytes);
      c.max_host_link_bytes = std::max(c.max_host_link_bytes, costs.ranks[i].host_link_bytes);
    }
    c.costs = costs;
    candidates.push_back(std::move(c));
  }

  std::ostringstream text;
  char line[512];
  text << "sharding plans for " << model->name << " on " << nodes << " node(s) of " << cluster.name
       << " (" << context.world << " GPUs, batch " << context.batch_per_gpu
       << " per GPU), ranked by step time (" << network << " network model)\n\n";
  std::snprintf(line, sizeof line, "%-4s %-44s %10s %10s %10s %12s %12s %12s %10s %14s\n", "rank",
                "plan", "step (ms)", "imbalance", "a2a/GPU", "cross-node", "replica/GPU",
                "memory/GPU", "fits", "torchrec (ms)");
  text << line;
  int rank = 0;
  // TorchRec's planner view: its estimate of each plan with this cluster's bandwidths.
  const models::TorchrecTopology torchrec = models::TorchrecTopology::of(context);
  const Candidate* torchrec_first = nullptr;
  double torchrec_best = 0;
  for (const Candidate& c : candidates) {
    const double estimate = models::torchrec_rating(c.plan, context, torchrec);
    if (c.fits && (!torchrec_first || estimate < torchrec_best)) {
      torchrec_first = &c;
      torchrec_best = estimate;
    }
    std::snprintf(line, sizeof line,
                  "%-4d %-44s %10s %9.2fx %8.1f MB %9.1f MB %9.1f MB %9.1f GB %10s %14.3f\n",
                  ++rank, c.plan.name.substr(0, 44).c_str(),
                  c.fits ? std::to_string(to_milliseconds(c.step_time)).substr(0, 8).c_str() : "-",
                  c.imbalance, c.max_alltoall_bytes / 1e6, c.cross_node_bytes / 1e6,
                  c.replica_sync_bytes / 1e6, c.max_memory / 1e9, c.fits ? "yes" : "no",
                  1e3 * estimate);
    text << line;
    if (!c.fits) text << "       " << c.overflow << "\n";
  }
  text
      << "\na2a/GPU: largest forward all-to-all bytes a GPU sends or receives per step, with the\n"
         "partial sums table-row-wise shards reduce inside their node (backward: the same again);\n"
         "cross-node: forward all-to-all bytes crossing nodes per step; replica/GPU: "
         "bytes a GPU\n"
         "all-reduces across replicas per step (2D); torchrec: TorchRec's planner estimate of "
         "the plan's\n"
         "embeddings (the largest GPU's lookup, update and exchange, nothing overlapped, ids "
         "uniform over\n"
         "row shards, no replica all-reduce) with this cluster's HBM, NVLink and NIC "
         "bandwidths.\n";
  if (torchrec_first) {
    text << "TorchRec's estimate would rank first: " << torchrec_first->plan.name << " ("
         << printf_string("%.3f", 1e3 * torchrec_best) << " ms).\n";
  }
  // Tables in host memory (sharding.storage, or moved there by a planner because no plan fits in
  // HBM): what the top-ranked plan keeps and moves there.
  long in_host = 0;
  if (!candidates.empty()) {
    const models::ShardingPlan& plan = candidates.front().plan;
    for (std::size_t i = 0; i < plan.tables.size(); ++i) {
      in_host += plan.tables[i].storage.value_or(context.model->tables[i].storage) !=
                 models::EmbeddingStorage::kHbm;
    }
  }
  if (in_host > 0) {
    const Candidate& top = candidates.front();
    char host[400];
    std::snprintf(host, sizeof host,
                  "Tables in host memory: %d of %zu; the top-ranked plan keeps up to %.1f GB of "
                  "rows and state per GPU there and moves up to %.1f MB per step over a GPU's host "
                  "link (%.0f GB/s each way).\n",
                  static_cast<int>(in_host), context.model->tables.size(), top.max_host_bytes / 1e9,
                  top.max_host_link_bytes / 1e6, context.host_link_bytes_per_s / 1e9);
    text << host;
  }
  text << "\n";
  // The best-ranked greedy variant (over all GPUs, or 2D with one node per group), or the best
  // plan.
  const auto chosen = std::find_if(candidates.begin(), candidates.end(), [&](const Candidate& c) {
    return emit == "best"  ? c.fits
           : emit == "job" ? c.plan.name == "the job's plan"
                           : c.plan.name.rfind("greedy", 0) == 0;
  });
  if (chosen == candidates.end()) {
    throw UsageError(emit == "job" ? "shard --emit job: the job lists no plan of its own"
                                   : "shard: no plan fits in memory");
  }
  const models::ShardingPlan& emitted = chosen->plan;
  write_rank_stats(text, *chosen, context, torchrec, cluster);
  models::JobSpec written = job;
  written.cluster = cluster_path;
  written.model = model_path;
  if (output_file) {
    // Paths relative to the written file (a job's paths are looked up beside it first).
    namespace fs = std::filesystem;
    const fs::path folder =
        fs::absolute(fs::path(vm["output"].as<std::string>())).lexically_normal().parent_path();
    auto relative = [&](const std::string& path) {
      return fs::absolute(resolve_config_path(path))
          .lexically_normal()
          .lexically_relative(folder)
          .string();
    };
    written.cluster = relative(cluster_path);
    written.model = relative(model_path);
  }
  const std::string yaml = models::job_yaml_with_plan(
      written, emitted, *model,
      {"Plan '" + emitted.name + "' by trainsim " + std::string(kTrainsimVersion) + " shard for " +
       std::to_string(nodes) + " node(s) of " + cluster.name +
       "; use with: trainsim predict --job THIS_FILE"});
  if (torchrec_file) {
    torchrec_file->stream() << torchrec_plan_json(emitted, *context.model, context.world,
                                                  cluster.gpus_per_node)
                                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            << "\n";
    torchrec_file->commit();
    text << "plan '" << emitted.name << "' in TorchRec's terms written to "
         << vm["torchrec"].as<std::string>() << "\n";
  }
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
