// `trainsim compare RESULT RESULT...`: what-ifs side by side at the same node counts.
#include <sstream>

#include <boost/program_options.hpp>

#include "tools/cli.h"
#include "tools/compare.h"
#include "tools/output_file.h"
#include "tools/result_reader.h"

namespace trainsim::cli {

namespace po = boost::program_options;

int run_compare(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("options");
  // clang-format off
  options.add_options()
    ("help,h", "show this help")
    ("format", po::value<std::string>()->default_value("table"), "table or csv")
    ("output,o", po::value<std::string>(), "write to FILE (default: standard output)");
  // clang-format on
  const po::variables_map vm = parse_options_list(args, options, "compare", "results");
  if (vm.count("help")) {
    out << "usage: trainsim compare RESULT RESULT... [--format table|csv] [-o FILE]\n\n"
           "Puts several results side by side at the same node counts: `predict --format json`\n"
           "outputs, or sweeps' CSV or JSON Lines files (each of a sweep's series: its other\n"
           "axes). The first series is A; every other row gives its throughput, efficiency,\n"
           "step time and each part of the step breakdown with its difference from A at the\n"
           "same node count (throughput in %, efficiency in points, times in ms per step).\n"
           "Throughput compares series with different baselines on one scale; each series'\n"
           "efficiency is over its own baseline. `trainsim report A B ...` puts the same table\n"
           "on a page with the plots.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  const std::vector<std::string> sources = vm.count("results")
                                               ? vm["results"].as<std::vector<std::string>>()
                                               : std::vector<std::string>{};
  if (sources.size() < 2) {
    throw UsageError("compare: give two results or more: trainsim compare A.json B.json");
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "table" && format != "csv") {
    throw UsageError("--format must be table or csv, not '" + format + "'");
  }
  std::vector<ResultSet> results;
  for (const std::string& s : sources) results.push_back(read_results(s));
  const Comparison c = compare_results(results, sources);
  std::ostringstream text;
  if (format == "csv") {
    write_comparison_csv(text, c);
  } else {
    write_comparison_table(text, c);
  }
  write_output(output_path(vm), out, text.str());
  return kExitOk;
}

}  // namespace trainsim::cli
