#include "tools/cli.h"

#include <charconv>
#include <cmath>
#include <filesystem>

#include "engine/check.h"
#include "engine/routing.h"
#include "models/spec/config_error.h"
#include "tools/version.h"

#ifndef TRAINSIM_SOURCE_DIR
#define TRAINSIM_SOURCE_DIR "."
#endif

namespace trainsim::cli {

namespace {

constexpr const char* kTopLevelHelp = R"(trainsim: predict how distributed training scales, and why.

usage: trainsim COMMAND [options]

commands:
  predict    simulate training steps for several node counts and print throughput, speedup,
             efficiency and where the step time goes
  collective predict a collective as NCCL runs it over a size sweep, printed like nccl-tests
  calibrate  fit the physical constants to nccl-tests logs; write a calibrated cluster
  shard      rank sharding strategies for a recommender job; print the greedy planner's plan
  sweep      predict every point of a sweep file (axes of config keys, files, node counts)
             in parallel, or over MPI ranks; resumable CSV or JSON Lines
  plan       the smallest node count and the cheapest cluster that meet a throughput target
             or a time-to-quality deadline
  report     one self-contained HTML page (plots, tables, configs) for a predict or sweep
             result, or several side by side
  compare    several results at the same node counts: throughput, efficiency and every
             part of the step, with their differences from the first
  check-claim
             check a reported speedup against the cluster, or two runs' throughput against
             their time-to-quality
  validate   run the validation cases (--leave-one-out: each log predicted from the others)
  describe   every key of a cluster, model, job or sweep file: type, unit, allowed values,
             default, meaning

Run `trainsim COMMAND --help` for the options of a command.

options:
  -h, --help     show this help
  --version      print the trainsim version
)";

}  // namespace

std::string resolve_config_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::exists(path) || fs::path(path).is_absolute()) return path;
  const fs::path in_source = fs::path(TRAINSIM_SOURCE_DIR) / path;
  if (fs::exists(in_source)) return in_source.string();
  return path;
}

std::vector<int> parse_node_list(const std::string& text) {
  std::vector<int> nodes;
  auto parse_int = [&](std::string_view s) {
    int value = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || ptr != s.data() + s.size() || value <= 0) {
      throw UsageError("--nodes: '" + std::string(s) + "' is not a positive whole number");
    }
    return value;
  };
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) throw UsageError("--nodes: empty entry in '" + text + "'");
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      nodes.push_back(parse_int(item));
    } else {
      const int first = parse_int(item.substr(0, dash));
      const int last = parse_int(item.substr(dash + 1));
      if (last < first) throw UsageError("--nodes: range '" + std::string(item) + "' is empty");
      if (last - first > 100000)
        throw UsageError("--nodes: range '" + std::string(item) + "' is too large");
      for (int n = first; n <= last; ++n) nodes.push_back(n);
    }
  }
  if (nodes.empty()) throw UsageError("--nodes: no node counts given");
  return nodes;
}

namespace {

// Every number given on the command line must be finite: nan and inf mean nothing as a target, a
// price or a size, and would otherwise slip past checks such as "must be positive".
void refuse_non_finite(const boost::program_options::variables_map& vm,
                       const std::string& command) {
  for (const auto& [name, value] : vm) {
    if (value.defaulted()) continue;
    std::vector<double> numbers;
    if (const auto* d = boost::any_cast<double>(&value.value())) numbers.push_back(*d);
    if (const auto* v = boost::any_cast<std::vector<double>>(&value.value())) numbers = *v;
    for (const double x : numbers) {
      if (!std::isfinite(x)) {
        throw UsageError(
            command + ": --" + name + ": must be a finite number, got '" +
            (std::isnan(x) ? std::string("nan") : std::string(x > 0 ? "inf" : "-inf")) + "'");
      }
    }
  }
}

}  // namespace

boost::program_options::variables_map parse_options(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const std::string& command) {
  namespace po = boost::program_options;
  po::variables_map vm;
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(options).run();
    for (const auto& option : parsed.options) {
      if (option.position_key >= 0) {
        throw UsageError(command + ": unexpected argument '" + option.value.front() + "'");
      }
    }
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what());
  }
  refuse_non_finite(vm, command);
  return vm;
}

boost::program_options::variables_map parse_options(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const std::string& command,
    const std::string& positional) {
  namespace po = boost::program_options;
  po::options_description hidden;
  hidden.add_options()(positional.c_str(), po::value<std::string>());
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description position;
  position.add(positional.c_str(), 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(position).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what());
  }
  refuse_non_finite(vm, command);
  return vm;
}

boost::program_options::variables_map parse_options_list(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const std::string& command,
    const std::string& positional) {
  namespace po = boost::program_options;
  po::options_description hidden;
  hidden.add_options()(positional.c_str(), po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description position;
  position.add(positional.c_str(), -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(position).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what());
  }
  refuse_non_finite(vm, command);
  return vm;
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
      out << kTopLevelHelp;
      return args.empty() ? kExitBadInput : kExitOk;
    }
    if (args[0] == "--version") {
      out << "trainsim " << kTrainsimVersion << "\n";
      return kExitOk;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "predict") return run_predict(rest, out, err);
    if (args[0] == "collective") return run_collective(rest, out, err);
    if (args[0] == "calibrate") return run_calibrate(rest, out, err);
    if (args[0] == "validate") return run_validate(rest, out, err);
    if (args[0] == "shard") return run_shard(rest, out, err);
    if (args[0] == "check-claim") return run_check_claim(rest, out, err);
    if (args[0] == "sweep") return run_sweep(rest, out, err);
    if (args[0] == "plan") return run_plan(rest, out, err);
    if (args[0] == "report") return run_report(rest, out, err);
    if (args[0] == "compare") return run_compare(rest, out, err);
    if (args[0] == "describe") return run_describe(rest, out, err);
    throw UsageError("unknown command '" + args[0] + "'");
  } catch (const UsageError& e) {
    err << "trainsim: error: " << e.what()
        << "\n(run `trainsim --help` or `trainsim COMMAND --help`)\n";
    return kExitBadInput;
  } catch (const models::ConfigError& e) {
    err << "trainsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const RoutingError& e) {
    err << "trainsim: error: the cluster's network is not connected: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const TimeRangeError& e) {
    err << "trainsim: error: " << e.what()
        << ": an input is far off (a rate near zero, a size far too large, a unit forgotten?)\n";
    return kExitBadInput;
  } catch (const InternalError& e) {
    err << "trainsim: " << e.what() << "\nThis is a bug in trainsim; please report it.\n";
    return kExitInternalError;
  } catch (const std::exception& e) {
    err << "trainsim: error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace trainsim::cli
