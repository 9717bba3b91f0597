// `trainsim collective`: predicts a collective's time over a size sweep and prints it in the exact
// layout of nccl-tests (size, count, type, redop, root, time, algbw, busbw, #wrong, out-of-place
// and in-place, "Avg bus bandwidth" footer), so a real log and a prediction can be diffed. Other
// operations can run at the same time (--with) and all-to-alls can be uneven (--hot-gpus), each
// operation's time with and without the others reported after the table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "engine/parallel.h"
#include "models/collectives/algorithms.h"
#include "models/collectives/flat_collectives.h"
#include "models/config/cluster_config.h"
#include "models/config/config_override.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;
using models::Algorithm;
using models::CollectiveOp;

namespace {

struct DataType {
  const char* name;
  int bytes;
};
constexpr DataType kTypes[] = {{"int8", 1},   {"uint8", 1},    {"int32", 4},  {"uint32", 4},
                               {"int64", 8},  {"uint64", 8},   {"half", 2},   {"float", 4},
                               {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};

constexpr const char* kRedops[] = {"sum", "prod", "max", "min", "avg", "mulsum"};

po::options_description collective_options() {
  po::options_description o("options");
  // clang-format off
  o.add_options()
    ("help,h", "show this help")
    ("cluster", po::value<std::string>()->default_value("configs/clusters/dgx-h100.yaml"),
     "cluster spec (YAML)")
    ("op", po::value<std::string>()->default_value("all_reduce"),
     "all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce or sendrecv (the "
     "nccl-tests binary names, all_reduce_perf, ..., work too)")
    ("nodes", po::value<int>()->default_value(1), "nodes taking part")
    ("gpus-per-node", po::value<int>(),
     "GPUs taking part per node (default: all); each keeps its own NICs, e.g. 1 for a "
     "one-GPU-per-node network test")
    ("minbytes,b", po::value<std::string>()->default_value("32M"),
     "smallest size, as nccl-tests: bytes with optional K, M, G (powers of 1024)")
    ("maxbytes,e", po::value<std::string>()->default_value("32M"), "largest size")
    ("stepfactor,f", po::value<int>()->default_value(1),
     "multiply the size by this each step; 1 (nccl-tests' default): add -i instead")
    ("stepbytes,i", po::value<std::string>()->default_value("1M"),
     "add this to the size each step when -f is 1")
    ("iters,n", po::value<int>()->default_value(20),
     "timed iterations (printed in the header: the model is deterministic)")
    ("warmup_iters,w", po::value<int>()->default_value(5), "warm-up iterations (likewise)")
    ("check,c", po::value<int>()->default_value(1),
     "check results (printed in the header; no data is moved, so #wrong is N/A)")
    ("datatype,d", po::value<std::string>()->default_value("float"),
     "element type: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, "
     "f8e4m3, f8e5m2; sets count and rounding")
    ("op_reduction,o", po::value<std::string>()->default_value("sum"),
     "reduction operation, as nccl-tests' -o: sum, prod, max, min, avg, mulsum (printed in the "
     "redop column; all reduce alike here)")
    ("root,r", po::value<int>()->default_value(0), "root rank (broadcast, reduce)")
    ("ngpus,g", po::value<int>()->default_value(1),
     "GPUs each host thread drives, as nccl-tests' -g: one process launching 8 GPUs pays 8 "
     "launches")
    ("algo", po::value<std::string>()->default_value("auto"),
     "auto (what NCCL's tuner picks per size), or as NCCL_ALGO would force it: ring, tree, nvls, "
     "nvls_tree, collnet_direct, collnet_chain, pat; hierarchical (not NCCL's); alltoall: 2d "
     "(PXN) or direct; sendrecv: p2p; flat (not NCCL's: the textbook schedule with every "
     "message one flow and no software cost, as MPI and SimGrid run it: all_reduce, all_gather "
     "and reduce_scatter as a ring over all ranks in rank order, alltoall as every message "
     "posted at once)")
    ("with", po::value<std::vector<std::string>>()->composing(),
     "OP:SIZE[:ALGO]: another operation on the same GPUs, started together with each size "
     "(e.g. alltoall:64M:flat), sharing the links by max-min fairness; each operation's time "
     "with the others and alone is printed after the table (flow network model; repeatable)")
    ("hot-gpus", po::value<std::string>(),
     "uneven all-to-all: these GPUs send --hot-factor times as much to every peer, in every "
     "alltoall of the run: ranks (0,8,16) or a local rank on every node (local:0)")
    ("hot-factor", po::value<double>()->default_value(1.0),
     "how many times as much each --hot-gpus GPU sends")
    ("set", po::value<std::vector<std::string>>()->composing(),
     "cluster.KEY=VALUE: change one cluster setting for this run, e.g. --set "
     "cluster.network.oversubscription=4 (repeatable)")
    ("env", po::value<std::vector<std::string>>()->composing(),
     "NAME=VALUE: an NCCL environment variable for the run (NCCL_ALGO, NCCL_PROTO, "
     "NCCL_MIN_NCHANNELS, NCCL_NCHANNELS_PER_NET_PEER, NCCL_PXN_DISABLE, ...), repeatable")
    ("verbose,v", "add the algorithm and protocol of each size as a trailing comment on its row")
    ("threads", po::value<int>()->default_value(0),
     "worker threads for flow simulations, one size per task (0: all cores); the output does "
     "not depend on it")
    ("network", po::value<std::string>()->default_value("flow"),
     "flow (every transfer a flow on the fabric) or analytic (the same streams evaluated "
     "without a simulation; equal when nothing else contends)")
    ("format", po::value<std::string>()->default_value("nccl-tests"),
     "nccl-tests (the table nccl-tests prints), csv or json")
    ("output", po::value<std::string>(), "write the result to FILE instead of standard output");
  // clang-format on
  return o;
}

// "8", "1K", "8M", "8G": powers of 1024, as nccl-tests parses -b/-e.
long long parse_size(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(flag + ": empty size");
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    throw UsageError(flag + ": '" + text + "' is not a size");
  }
  const std::string suffix = text.substr(used);
  long long multiplier = 1;
  if (suffix == "K" || suffix == "k") {
    multiplier = 1LL << 10;
  } else if (suffix == "M" || suffix == "m") {
    multiplier = 1LL << 20;
  } else if (suffix == "G" || suffix == "g") {
    multiplier = 1LL << 30;
  } else if (!suffix.empty()) {
    throw UsageError(flag + ": '" + text + "' has an unknown suffix (use K, M or G)");
  }
  if (value <= 0) throw UsageError(flag + ": size must be positive");
  return value * multiplier;
}

// One operation of the run: the swept one, or one started with it (--with).
struct OpSpec {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::string algo_name = "auto";
  std::optional<Algorithm> forced;  // unset: NCCL's tuner picks (or the flat schedule)
  bool flat = false;
  long long requested = 0;  // --with: its size as given
};

OpSpec parse_op_spec(const std::string& op_flag, const std::string& op_text,
                     const std::string& flag, const std::string& algo_text) {
  OpSpec spec;
  const auto op = models::parse_collective(op_text);
  if (!op) throw UsageError(op_flag + ": unknown collective '" + op_text + "'");
  spec.op = *op;
  spec.algo_name = algo_text;
  if (algo_text == "flat") {
    spec.flat = true;
    if (!models::has_flat_form(*op)) {
      throw UsageError(flag + ": " + op_text +
                       " has no flat form (all_reduce, all_gather, reduce_scatter, alltoall)");
    }
  } else if (algo_text != "auto") {
    spec.forced = models::parse_algorithm(algo_text);
    if (!spec.forced) throw UsageError(flag + ": unknown algorithm '" + algo_text + "'");
  }
  return spec;
}

// An operation at one size, ready to run.
struct PlannedOp {
  models::CollectiveRequest request;
  bool flat = false;
  std::optional<models::ByteMatrix> matrix;  // an uneven all-to-all's bytes
  Time analytic_time = 0;
  std::string algorithm() const {
    return flat ? "flat" : std::string(models::algorithm_name(request.algorithm));
  }
  std::string protocol() const {
    return flat ? "none" : std::string(models::protocol_name(*request.protocol));
  }
  std::string label() const { return algorithm() + "/" + protocol(); }
};

PlannedOp plan_op(Router& router, const models::ClusterSpec& cluster,
                  const models::ClusterTopology& topology, models::AnalyticCache& cache,
                  const OpSpec& spec, double bytes, int root, int gpus_per_thread,
                  const std::vector<double>& send_scale, bool analytic) {
  PlannedOp p;
  p.flat = spec.flat;
  p.request.op = spec.op;
  p.request.bytes = bytes;
  p.request.root = root;
  p.request.gpus_per_thread = gpus_per_thread;
  const int ranks = topology.gpu_count();
  if (spec.op == CollectiveOp::kAllToAll &&
      std::any_of(send_scale.begin(), send_scale.end(), [](double f) { return f != 1.0; })) {
    // nccl-tests' all-to-all sends size / ranks to every rank, itself included; a hot GPU
    // sends that many times as much. The flat schedule sends nothing to itself.
    models::ByteMatrix m(ranks);
    for (int a = 0; a < ranks; ++a) {
      for (int b = 0; b < ranks; ++b) {
        if (a != b || !spec.flat) m.add(a, b, bytes / ranks * send_scale[a]);
      }
    }
    p.matrix = std::move(m);
  }
  if (spec.flat) {
    // No choice to make: the analytic time only where it is the answer.
    if (!analytic) return p;
    p.analytic_time = p.matrix ? models::flat_alltoallv_time(router, topology, *p.matrix)
                               : models::flat_collective_time(router, topology, spec.op, bytes);
    return p;
  }
  // NCCL's tuner chooses from its own cost model; in flow mode the simulation gives the time,
  // so no analytic estimate is made to be thrown away.
  models::PickedAlgorithm picked;
  if (spec.forced) {
    p.request.algorithm = *spec.forced;
    picked = models::pick_protocol(router, cluster, topology, p.request, &cache, analytic);
  } else {
    picked = models::pick_algorithm(router, cluster, topology, spec.op, bytes, &cache,
                                    gpus_per_thread, analytic);
  }
  p.request.algorithm = picked.algorithm;
  p.request.protocol = picked.protocol;
  if (!analytic) return p;
  p.analytic_time =
      p.matrix ? models::alltoallv_time(router, cluster, topology, *p.matrix, picked.algorithm)
               : picked.analytic_time;
  return p;
}

std::unique_ptr<models::Collective> make_op(Simulation& sim, FlowNetwork& flows,
                                            const models::ClusterSpec& cluster,
                                            const models::ClusterTopology& topology,
                                            const PlannedOp& p) {
  if (p.flat) {
    return p.matrix
               ? models::make_flat_alltoallv(sim, flows, topology, *p.matrix)
               : models::make_flat_collective(sim, flows, topology, p.request.op, p.request.bytes);
  }
  if (p.matrix) {
    return models::make_alltoallv(sim, flows, cluster, topology, *p.matrix, p.request.algorithm);
  }
  return models::make_flow_collective(sim, flows, cluster, topology, p.request);
}

// When an operation's last rank finished, and the mean over its ranks.
struct OpResult {
  Time time = 0;
  double mean_finish_s = 0.0;
};

// The operations started together, every rank joining at time 0, as flows on one fabric.
std::vector<OpResult> simulate(const models::ClusterSpec& cluster,
                               const models::ClusterTopology& topology,
                               const std::vector<const PlannedOp*>& ops) {
  Simulation sim;
  FlowNetwork flows(sim, topology.topology);
  flows.set_latency_first(cluster.network.latency_first);
  const int ranks = topology.gpu_count();
  std::vector<std::vector<Time>> finish(ops.size(), std::vector<Time>(ranks, 0));
  std::vector<std::unique_ptr<models::Collective>> running;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    running.push_back(make_op(sim, flows, cluster, topology, *ops[i]));
    // An operation alone on the fabric may simulate one rank per class of symmetric ones.
    running.back()->join_all(
        ranks, [&sim, &finish, i](int r) { finish[i][r] = sim.now(); }, ops.size() == 1);
  }
  sim.run();
  std::vector<OpResult> out(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    double sum = 0.0;
    for (const Time t : finish[i]) {
      out[i].time = std::max(out[i].time, t);
      sum += to_seconds(t);
    }
    out[i].mean_finish_s = sum / ranks;
  }
  return out;
}

struct Row {
  long long size = 0;
  long long count = 0;
  Time time = 0;
  double mean_finish_s = 0.0;
  Time alone = 0;      // with --with: the time without the other operations
  double algbw = 0.0;  // GB/s
  double busbw = 0.0;  // GB/s
  std::string algorithm;
  std::string protocol;
  std::vector<OpResult> with;  // the --with operations, started together with this size
  std::string label() const { return algorithm + "/" + protocol; }
};

// "local:0" (that local rank on every node) or "0,8,16" (ranks).
std::vector<double> parse_hot_gpus(const std::string& text, double factor, int ranks, int gpus) {
  std::vector<double> scale(ranks, 1.0);
  auto bad = [&](const std::string& why) { return UsageError("--hot-gpus " + text + ": " + why); };
  auto number = [&](const std::string& item, int below) {
    std::size_t used = 0;
    int value = -1;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      throw bad("'" + item + "' is not a number");
    }
    if (used != item.size() || value < 0 || value >= below) {
      throw bad("'" + item + "' is not between 0 and " + std::to_string(below - 1));
    }
    return value;
  };
  if (text.rfind("local:", 0) == 0) {
    const int local = number(text.substr(6), gpus);
    for (int r = local; r < ranks; r += gpus) scale[r] = factor;
    return scale;
  }
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) scale[number(item, ranks)] = factor;
  return scale;
}

std::string time_field(double us) {
  // nccl-tests: two decimals below 10 ms, one below 100 ms, none above.
  char buffer[32];
  if (us >= 100000.0) {
    std::snprintf(buffer, sizeof buffer, "%7.0f", us);
  } else if (us >= 10000.0) {
    std::snprintf(buffer, sizeof buffer, "%7.1f", us);
  } else {
    std::snprintf(buffer, sizeof buffer, "%7.2f", us);
  }
  return buffer;
}

std::string describe(const OpSpec& spec, const PlannedOp& plan) {
  return std::string(models::collective_name(spec.op)) + " " +
         std::to_string(static_cast<long long>(plan.request.bytes)) + " B, " + plan.label();
}

double slowdown(Time with, Time alone) {
  return alone > 0 ? static_cast<double>(with) / static_cast<double>(alone) : 1.0;
}

}  // namespace

int run_collective(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  const po::options_description options = collective_options();
  const po::variables_map vm = parse_options(args, options, "collective");
  if (vm.count("help")) {
    out << "usage: trainsim collective [--cluster FILE] [--op OP] [--nodes N] [--gpus-per-node G]\n"
           "                           [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-d TYPE] [-o "
           "REDOP]\n"
           "                           [-r ROOT] [-g GPUS] [-n ITERS] [-w WARMUP] [-c CHECK]\n"
           "                           [--algo ALGO] [--env NAME=VALUE]... [--verbose]\n"
           "                           [--with OP:SIZE[:ALGO]]... [--hot-gpus GPUS --hot-factor "
           "F]\n"
           "                           [--set cluster.KEY=VALUE]... [--network flow|analytic]\n"
           "                           [--format F] [--output FILE]\n\n"
           "Predicts a collective over a sweep of sizes on N nodes of the cluster, as NCCL runs "
           "it\n"
           "(its channels, algorithms, protocols and tuner's choice per size), and prints it as\n"
           "nccl-tests does: the flags mean what they mean in nccl-tests, and sizes, counts, "
           "redop\n"
           "and bus bandwidth follow its conventions (busbw = algbw x 2(n-1)/n for all_reduce,\n"
           "(n-1)/n for all_gather, reduce_scatter and alltoall, 1 otherwise), so a real log and "
           "a\n"
           "prediction line up row by row under `diff`. The in-place columns repeat the\n"
           "out-of-place prediction; #wrong is N/A (no data is moved). A comment after the table\n"
           "names the algorithm and protocol per size (--verbose: on every row).\n\n"
           "Under cross-traffic: --with starts other operations together with each size, sharing\n"
           "the links by max-min fairness, and prints each one's time with the others and alone;\n"
           "--hot-gpus makes the all-to-alls uneven; --algo flat runs the textbook schedule\n"
           "(every message one flow), as MPI and SimGrid run it; alone (no --with), messages\n"
           "(flat) or NCCL's alltoall and sendrecv transfers that move as one by symmetry (every\n"
           "node's ranks alike, a hot GPU's node a kind of its own) are simulated once per class,\n"
           "with the same times.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  const std::string algo_name = vm["algo"].as<std::string>();
  const OpSpec main_op = parse_op_spec("--op", vm["op"].as<std::string>(), "--algo", algo_name);
  const std::optional<CollectiveOp> op = main_op.op;
  const models::NetworkModel network_model =
      parse_choice(vm, "network", models::network_model_names());
  const std::string network(models::network_model_names().name(network_model));
  const std::string format = vm["format"].as<std::string>();
  if (format != "nccl-tests" && format != "csv" && format != "json") {
    throw UsageError("--format must be nccl-tests, csv or json, not '" + format + "'");
  }
  const std::string type_name = vm["datatype"].as<std::string>();
  const DataType* type = nullptr;
  for (const DataType& t : kTypes) {
    if (type_name == t.name) type = &t;
  }
  if (!type) throw UsageError("-d: unknown type '" + type_name + "'");
  const std::string redop = vm["op_reduction"].as<std::string>();
  if (std::find(std::begin(kRedops), std::end(kRedops), redop) == std::end(kRedops)) {
    throw UsageError("-o: unknown reduction '" + redop + "' (sum, prod, max, min, avg, mulsum)");
  }
  const long long min_bytes = parse_size("-b", vm["minbytes"].as<std::string>());
  const long long max_bytes = parse_size("-e", vm["maxbytes"].as<std::string>());
  const long long step_bytes = parse_size("-i", vm["stepbytes"].as<std::string>());
  const int factor = vm["stepfactor"].as<int>();
  if (max_bytes < min_bytes) throw UsageError("-e must not be smaller than -b");
  if (factor < 1) throw UsageError("-f must be at least 1");
  const int iters = vm["iters"].as<int>();
  const int warmup = vm["warmup_iters"].as<int>();
  const int check = vm["check"].as<int>();
  const int gpus_per_thread = vm["ngpus"].as<int>();
  if (iters < 1 || warmup < 0 || check < 0) throw UsageError("-n, -w and -c must be >= 1, 0, 0");

  std::vector<models::ConfigOverride> overrides;
  if (vm.count("set")) {
    for (const std::string& text : vm["set"].as<std::vector<std::string>>()) {
      overrides.push_back(models::parse_override(text, models::SourceLocation{"--set", 0, 0, ""}));
      if (overrides.back().target != "cluster") {
        throw UsageError("--set " + text + ": collective changes only cluster.KEY settings");
      }
    }
  }
  const std::string cluster_path = resolve_config_path(vm["cluster"].as<std::string>());
  models::ClusterSpec base = models::load_with_overrides(overrides, "cluster", [&] {
    return models::load_cluster_spec(cluster_path, models::settings_for(overrides, "cluster"));
  });
  if (vm.count("env")) {
    for (const std::string& item : vm["env"].as<std::vector<std::string>>()) {
      const auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--env " + item + ": NAME=VALUE");
      const std::string error =
          models::apply_nccl_env(base.collectives, item.substr(0, eq), item.substr(eq + 1));
      if (!error.empty()) throw UsageError("--env " + item + ": " + error);
    }
  }
  const int nodes = vm["nodes"].as<int>();
  if (nodes < 1 || nodes > base.nodes) {
    throw UsageError("--nodes " + std::to_string(nodes) + ": cluster '" + base.name + "' has " +
                     std::to_string(base.nodes) + " nodes");
  }
  const int gpus = vm.count("gpus-per-node") ? vm["gpus-per-node"].as<int>() : base.gpus_per_node;
  if (gpus < 1 || gpus > base.gpus_per_node) {
    throw UsageError("--gpus-per-node must be between 1 and " + std::to_string(base.gpus_per_node));
  }
  const models::ClusterSpec cluster = models::restrict_gpus_per_node(base, gpus);
  const int ranks = nodes * gpus;
  if (gpus_per_thread < 1 || gpus_per_thread > gpus) {
    throw UsageError("-g must be between 1 and the GPUs per node (" + std::to_string(gpus) + ")");
  }
  const int root = vm["root"].as<int>();
  if (root < 0 || root >= ranks)
    throw UsageError("--root must be a rank below " + std::to_string(ranks));
  std::vector<OpSpec> with_ops;
  if (vm.count("with")) {
    for (const std::string& item : vm["with"].as<std::vector<std::string>>()) {
      const std::string flag = "--with " + item;
      std::vector<std::string> parts;
      std::stringstream fields(item);
      for (std::string part; std::getline(fields, part, ':');) parts.push_back(part);
      if (parts.size() < 2 || parts.size() > 3) throw UsageError(flag + ": OP:SIZE[:ALGO]");
      with_ops.push_back(
          parse_op_spec(flag, parts[0], flag, parts.size() == 3 ? parts[2] : "auto"));
      with_ops.back().requested = parse_size(flag, parts[1]);
    }
  }
  std::vector<const OpSpec*> all_ops{&main_op};
  for (const OpSpec& w : with_ops) all_ops.push_back(&w);
  for (const OpSpec* spec : all_ops) {
    const std::string name(models::collective_name(spec->op));
    if (spec->forced && !models::is_applicable(*spec->forced, spec->op, cluster, nodes)) {
      throw UsageError("--algo " + spec->algo_name + " cannot run " + name + " on " +
                       std::to_string(nodes) + " node(s) of " + cluster.name);
    }
    if (!spec->flat && models::applicable_algorithms(spec->op, cluster, nodes).empty()) {
      throw UsageError("no algorithm runs " + name + " here");
    }
  }
  const double hot_factor = vm["hot-factor"].as<double>();
  if (!(hot_factor > 0)) throw UsageError("--hot-factor must be positive");
  if (hot_factor != 1.0 && !vm.count("hot-gpus")) {
    throw UsageError("--hot-factor needs --hot-gpus (the GPUs that send more)");
  }
  const std::vector<double> send_scale =
      vm.count("hot-gpus")
          ? parse_hot_gpus(vm["hot-gpus"].as<std::string>(), hot_factor, ranks, gpus)
          : std::vector<double>(ranks, 1.0);
  const bool uneven = vm.count("hot-gpus") > 0;
  if (uneven && std::none_of(all_ops.begin(), all_ops.end(),
                             [](const OpSpec* o) { return o->op == CollectiveOp::kAllToAll; })) {
    throw UsageError("--hot-gpus makes an all-to-all uneven: run alltoall (--op or --with)");
  }
  if (!with_ops.empty() && network_model != models::NetworkModel::kFlow) {
    throw UsageError("--with needs --network flow: operations contend only as flows");
  }

  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());

  const models::ClusterTopology topology = models::build_cluster_topology(cluster, nodes);
  // Plan every operation at every size in order (NCCL's tuner picks; the analytic time only for
  // --network analytic), then simulate the sizes.
  const bool flow = network_model == models::NetworkModel::kFlow;
  std::vector<Row> rows;
  std::vector<PlannedOp> plans;
  std::vector<PlannedOp> with_plans;
  {
    Router router(topology.topology);
    models::AnalyticCache cache;
    for (const OpSpec& w : with_ops) {
      const long long size = models::nccl_tests_size(w.op, w.requested, type->bytes, ranks);
      with_plans.push_back(plan_op(router, cluster, topology, cache, w, static_cast<double>(size),
                                   root, gpus_per_thread, send_scale, !flow));
    }
    // nccl-tests: multiply by -f when it is above 1, else add -i.
    for (long long requested = min_bytes; requested <= max_bytes;
         requested = factor > 1 ? requested * factor : requested + step_bytes) {
      Row row;
      row.size = models::nccl_tests_size(*op, requested, type->bytes, ranks);
      row.count = models::nccl_tests_count(*op, row.size, type->bytes, ranks);
      plans.push_back(plan_op(router, cluster, topology, cache, main_op,
                              static_cast<double>(row.size), root, gpus_per_thread, send_scale,
                              !flow));
      row.algorithm = plans.back().algorithm();
      row.protocol = plans.back().protocol();
      row.time = row.alone = plans.back().analytic_time;
      row.mean_finish_s = to_seconds(row.time);
      rows.push_back(row);
      if (factor > 1 && requested > max_bytes / factor) break;
      if (rows.size() > 100000) throw UsageError("more than 100000 sizes: raise -i or -f");
    }
  }
  // Sizes are independent simulations, run in parallel; results land in their own slots, so the
  // output is the same for any thread count.
  std::vector<OpResult> with_alone;
  if (flow) {
    const int threads = vm["threads"].as<int>();
    if (threads < 0) throw UsageError("--threads must not be negative");
    parallel_for_index(rows.size(), threads, [&](std::size_t i) {
      std::vector<const PlannedOp*> ops{&plans[i]};
      for (const PlannedOp& w : with_plans) ops.push_back(&w);
      const std::vector<OpResult> together = simulate(cluster, topology, ops);
      rows[i].time = together[0].time;
      rows[i].mean_finish_s = together[0].mean_finish_s;
      rows[i].with.assign(together.begin() + 1, together.end());
      rows[i].alone =
          with_plans.empty() ? rows[i].time : simulate(cluster, topology, {&plans[i]})[0].time;
    });
    with_alone.resize(with_plans.size());
    parallel_for_index(with_plans.size(), threads, [&](std::size_t i) {
      with_alone[i] = simulate(cluster, topology, {&with_plans[i]})[0];
    });
  }
  for (Row& row : rows) {
    const double seconds = to_seconds(row.time);
    row.algbw =
        row.size == 0 || seconds == 0.0 ? 0.0 : static_cast<double>(row.size) / seconds / 1e9;
    row.busbw = row.algbw * models::bus_bandwidth_factor(*op, ranks);
  }

  std::ostringstream text;
  const std::string op_name(models::collective_name(*op));
  const std::string printed_redop = models::has_reduction(*op) ? redop : "none";
  const int printed_root = models::has_root(*op) ? root : -1;
  double busbw_sum = 0.0;
  for (const Row& r : rows) busbw_sum += 2 * r.busbw;
  const double avg_busbw = rows.empty() ? 0.0 : busbw_sum / (2.0 * rows.size());
  if (format == "nccl-tests") {
    text << "# trainsim " << kTrainsimVersion
         << " prediction in nccl-tests format (no GPU was used)\n"
         << "# cluster " << cluster.name << " (" << cluster.source_file << "), " << nodes
         << " node(s) x " << gpus << " GPU(s), NCCL "
         << models::nccl_version_name(cluster.collectives.nccl_version) << ", network model "
         << network << ", algorithm " << algo_name << "\n";
    for (std::size_t w = 0; w < with_ops.size(); ++w) {
      text << "# started together with each size: " << describe(with_ops[w], with_plans[w]) << "\n";
    }
    if (uneven) {
      text << "# uneven all-to-all: GPUs " << vm["hot-gpus"].as<std::string>() << " send "
           << hot_factor << "x as much\n";
    }
    text << "# Collective test starting: " << op_name << "_perf\n"
         << "# nThread 1 nGpus " << gpus_per_thread << " minBytes " << min_bytes << " maxBytes "
         << max_bytes << " step: " << (factor > 1 ? factor : step_bytes)
         << (factor > 1 ? "(factor)" : "(bytes)") << " warmup iters: " << warmup
         << " iters: " << iters << " agg iters: 1 validation: " << check << " graph: 0\n"
         << "#\n# Using devices\n";
    char line[256];
    for (int r = 0; r < ranks; ++r) {
      std::snprintf(line, sizeof line,
                    "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] %s\n", r, 0,
                    ("node" + std::to_string(r / gpus)).c_str(), r % gpus, r % gpus,
                    cluster.gpu.model.c_str());
      text << line;
    }
    text << "#\n"
         << "#                                                              out-of-place           "
            "            in-place          \n"
         << "#       size         count      type   redop    root     time   algbw   busbw  #wrong "
            "    time   algbw   busbw  #wrong \n"
         << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
            "    (us)  (GB/s)  (GB/s)         \n";
    for (const Row& r : rows) {
      const std::string t = time_field(to_microseconds(r.time));
      std::snprintf(line, sizeof line,
                    "%12lld  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %6s  %s  %6.2f  %6.2f  %6s",
                    r.size, r.count, type->name, printed_redop.c_str(), printed_root, t.c_str(),
                    r.algbw, r.busbw, "N/A", t.c_str(), r.algbw, r.busbw, "N/A");
      text << line;
      if (vm.count("verbose")) text << "  # " << r.label();
      text << "\n";
    }
    std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g \n", avg_busbw);
    text << "# Out of bounds values : 0 OK\n" << line << "#\n";
    // Algorithms used, as comment lines (runs of equal algorithm).
    text << "# Algorithm per size:";
    for (std::size_t i = 0; i < rows.size();) {
      std::size_t j = i;
      while (j + 1 < rows.size() && rows[j + 1].label() == rows[i].label()) ++j;
      text << (i == 0 ? " " : ", ") << rows[i].label() << " " << rows[i].size
           << (j > i ? "-" + std::to_string(rows[j].size) : "") << " B";
      i = j + 1;
    }
    text << "\n";
    if (!with_ops.empty()) {
      text << "# Started together (time with the others, alone, and the slowdown):\n";
      for (const Row& r : rows) {
        std::snprintf(line, sizeof line, "# %12lld B: %s %.2f us (alone %.2f us, %.3fx)", r.size,
                      op_name.c_str(), to_microseconds(r.time), to_microseconds(r.alone),
                      slowdown(r.time, r.alone));
        text << line;
        for (std::size_t w = 0; w < with_ops.size(); ++w) {
          std::snprintf(line, sizeof line, "; %s %lld B %.2f us (alone %.2f us, %.3fx)",
                        std::string(models::collective_name(with_ops[w].op)).c_str(),
                        static_cast<long long>(with_plans[w].request.bytes),
                        to_microseconds(r.with[w].time), to_microseconds(with_alone[w].time),
                        slowdown(r.with[w].time, with_alone[w].time));
          text << line;
        }
        text << "\n";
      }
    }
    text << "# Collective test concluded: " << op_name << "_perf\n";
  } else if (format == "csv") {
    // The contention columns only when there is contention or skew to show.
    const bool extra = uneven || !with_ops.empty();
    text << "size_bytes,count,type,redop,root,time_us,algbw_gb_per_s,busbw_gb_per_s,algorithm,"
            "protocol";
    if (extra) text << ",mean_rank_finish_us,alone_time_us";
    for (std::size_t w = 1; w <= with_ops.size(); ++w) {
      text << ",with" << w << "_time_us,with" << w << "_alone_time_us";
    }
    text << "\n";
    for (const Row& r : rows) {
      char line[256];
      std::snprintf(line, sizeof line, "%lld,%lld,%s,%s,%d,%.6f,%.6f,%.6f,%s,%s", r.size, r.count,
                    type->name, printed_redop.c_str(), printed_root, to_microseconds(r.time),
                    r.algbw, r.busbw, r.algorithm.c_str(), r.protocol.c_str());
      text << line;
      if (extra) {
        std::snprintf(line, sizeof line, ",%.6f,%.6f", 1e6 * r.mean_finish_s,
                      to_microseconds(r.alone));
        text << line;
      }
      for (std::size_t w = 0; w < with_ops.size(); ++w) {
        std::snprintf(line, sizeof line, ",%.6f,%.6f", to_microseconds(r.with[w].time),
                      to_microseconds(with_alone[w].time));
        text << line;
      }
      text << "\n";
    }
  } else {
    nlohmann::ordered_json doc;
    doc["trainsim_version"] = kTrainsimVersion;
    doc["cluster"] = {{"name", cluster.name}, {"file", cluster.source_file}};
    doc["op"] = op_name;
    doc["nodes"] = nodes;
    doc["gpus_per_node"] = gpus;
    doc["ranks"] = ranks;
    doc["nccl_version"] = models::nccl_version_name(cluster.collectives.nccl_version);
    doc["network_model"] = network;
    doc["avg_busbw_gb_per_s"] = avg_busbw;
    if (uneven) {
      auto& hot = doc["hot_gpus"] = nlohmann::ordered_json::array();
      for (int r = 0; r < ranks; ++r) {
        if (send_scale[r] != 1.0) hot.push_back(r);
      }
      doc["hot_factor"] = hot_factor;
    }
    auto& out_rows = doc["rows"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      out_rows.push_back({{"size_bytes", r.size},
                          {"count", r.count},
                          {"time_us", to_microseconds(r.time)},
                          {"algbw_gb_per_s", r.algbw},
                          {"busbw_gb_per_s", r.busbw},
                          {"algorithm", r.algorithm},
                          {"protocol", r.protocol},
                          {"mean_rank_finish_us", 1e6 * r.mean_finish_s}});
      if (with_ops.empty()) continue;
      auto& row = out_rows.back();
      row["alone_time_us"] = to_microseconds(r.alone);
      auto& with = row["with"] = nlohmann::ordered_json::array();
      for (std::size_t w = 0; w < with_ops.size(); ++w) {
        with.push_back({{"op", models::collective_name(with_ops[w].op)},
                        {"size_bytes", static_cast<long long>(with_plans[w].request.bytes)},
                        {"algorithm", with_plans[w].algorithm()},
                        {"protocol", with_plans[w].protocol()},
                        {"time_us", to_microseconds(r.with[w].time)},
                        {"mean_rank_finish_us", 1e6 * r.with[w].mean_finish_s},
                        {"alone_time_us", to_microseconds(with_alone[w].time)}});
      }
    }
    text << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (output_file) {
    output_file->stream() << text.str();
    output_file->commit();
  } else {
    out << text.str();
  }
  return kExitOk;
}

}  // namespace trainsim::cli
