// `trainsim collective`: predicts a collective's time over a size sweep and prints it in the exact
// layout of nccl-tests (size, count, type, redop, root, time, algbw, busbw, #wrong, out-of-place
// and in-place, "Avg bus bandwidth" footer), so a real log and a prediction can be diffed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "engine/parallel.h"
#include "models/collectives/algorithms.h"
#include "models/config/cluster_config.h"
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
     "(PXN) or direct; sendrecv: p2p")
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

struct Row {
  long long size = 0;
  long long count = 0;
  Time time = 0;
  double algbw = 0.0;  // GB/s
  double busbw = 0.0;  // GB/s
  Algorithm algorithm = Algorithm::kRing;
  models::Protocol protocol = models::Protocol::kSimple;
  std::string label() const {
    return std::string(models::algorithm_name(algorithm)) + "/" +
           std::string(models::protocol_name(protocol));
  }
};

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
           "                           [--network flow|analytic] [--format F] [--output FILE]\n\n"
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
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  const auto op = models::parse_collective(vm["op"].as<std::string>());
  if (!op) throw UsageError("--op: unknown collective '" + vm["op"].as<std::string>() + "'");
  const std::string algo_name = vm["algo"].as<std::string>();
  std::optional<Algorithm> forced;
  if (algo_name != "auto") {
    forced = models::parse_algorithm(algo_name);
    if (!forced) throw UsageError("--algo: unknown algorithm '" + algo_name + "'");
  }
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

  models::ClusterSpec base =
      models::load_cluster_spec(resolve_config_path(vm["cluster"].as<std::string>()));
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
  if (forced && !models::is_applicable(*forced, *op, cluster, nodes)) {
    throw UsageError("--algo " + algo_name + " cannot run " +
                     std::string(models::collective_name(*op)) + " on " + std::to_string(nodes) +
                     " node(s) of " + cluster.name);
  }
  if (models::applicable_algorithms(*op, cluster, nodes).empty()) {
    throw UsageError("no algorithm runs " + std::string(models::collective_name(*op)) + " here");
  }

  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());

  const models::ClusterTopology topology = models::build_cluster_topology(cluster, nodes);
  // Pick algorithms (analytic, fast) in order, then simulate each size on its own: sizes are
  // independent simulations, run in parallel; results land in their own slots, so the output
  // is the same for any thread count.
  std::vector<Row> rows;
  std::vector<models::CollectiveRequest> requests;
  {
    Router router(topology.topology);
    models::AnalyticCache cache;
    // nccl-tests: multiply by -f when it is above 1, else add -i.
    for (long long requested = min_bytes; requested <= max_bytes;
         requested = factor > 1 ? requested * factor : requested + step_bytes) {
      Row row;
      row.size = models::nccl_tests_size(*op, requested, type->bytes, ranks);
      row.count = models::nccl_tests_count(*op, row.size, type->bytes, ranks);
      const double bytes = static_cast<double>(row.size);
      models::CollectiveRequest request;
      request.op = *op;
      request.bytes = bytes;
      request.root = root;
      request.gpus_per_thread = gpus_per_thread;
      models::PickedAlgorithm picked;
      if (forced) {
        request.algorithm = *forced;
        picked = models::pick_protocol(router, cluster, topology, request, &cache);
      } else {
        picked =
            models::pick_algorithm(router, cluster, topology, *op, bytes, &cache, gpus_per_thread);
      }
      row.algorithm = request.algorithm = picked.algorithm;
      row.protocol = picked.protocol;
      request.protocol = picked.protocol;
      row.time = picked.analytic_time;
      rows.push_back(row);
      requests.push_back(request);
      if (factor > 1 && requested > max_bytes / factor) break;
      if (rows.size() > 100000) throw UsageError("more than 100000 sizes: raise -i or -f");
    }
  }
  if (network_model == models::NetworkModel::kFlow) {
    const int threads = vm["threads"].as<int>();
    if (threads < 0) throw UsageError("--threads must not be negative");
    parallel_for_index(rows.size(), threads, [&](std::size_t i) {
      Simulation sim;
      FlowNetwork flows(sim, topology.topology);
      auto collective = models::make_flow_collective(sim, flows, cluster, topology, requests[i]);
      for (int r = 0; r < ranks; ++r) collective->join(r, [] {});
      sim.run();
      rows[i].time = sim.now();
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
         << network << ", algorithm " << algo_name << "\n"
         << "# Collective test starting: " << op_name << "_perf\n"
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
    text << "\n# Collective test concluded: " << op_name << "_perf\n";
  } else if (format == "csv") {
    text << "size_bytes,count,type,redop,root,time_us,algbw_gb_per_s,busbw_gb_per_s,algorithm,"
            "protocol\n";
    for (const Row& r : rows) {
      char line[256];
      std::snprintf(line, sizeof line, "%lld,%lld,%s,%s,%d,%.6f,%.6f,%.6f,%s,%s\n", r.size, r.count,
                    type->name, printed_redop.c_str(), printed_root, to_microseconds(r.time),
                    r.algbw, r.busbw, std::string(models::algorithm_name(r.algorithm)).c_str(),
                    std::string(models::protocol_name(r.protocol)).c_str());
      text << line;
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
    auto& out_rows = doc["rows"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      out_rows.push_back({{"size_bytes", r.size},
                          {"count", r.count},
                          {"time_us", to_microseconds(r.time)},
                          {"algbw_gb_per_s", r.algbw},
                          {"busbw_gb_per_s", r.busbw},
                          {"algorithm", models::algorithm_name(r.algorithm)},
                          {"protocol", models::protocol_name(r.protocol)}});
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
