// `trainsim report RESULT`: one self-contained HTML page (tables, plots, the configs used and the
// trainsim version) for a predict JSON result or a sweep's output.
#include <fstream>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/config/sweep_config.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/plot_svg.h"
#include "tools/result_reader.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:2em;color:#222;max-width:1200px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}"
    "th{background:#f2f2f2}td.text{text-align:left}"
    "pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:12px}"
    "summary{cursor:pointer;font-family:monospace}";

std::string read_text(const std::string& path) {
  std::ifstream in(resolve_config_path(path), std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

void write_report_html(std::ostream& out, const ResultSet& r, const std::string& source) {
  std::ostringstream svg;
  write_scaling_svg(svg, r.series, r.title, r.baseline_nodes);
  std::string plot = svg.str();
  plot = plot.substr(plot.find("<svg"));  // inline: no XML declaration
  out << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      << "<meta charset=\"utf-8\"/>\n<title>trainsim: " << xml_escape(r.title) << "</title>\n"
      << "<style>" << kStyle << "</style>\n</head>\n<body>\n"
      << "<h1>trainsim " << xml_escape(r.kind) << ": " << xml_escape(r.title) << "</h1>\n"
      << "<p>From <code>" << xml_escape(source) << "</code>; results by trainsim "
      << xml_escape(r.version.empty() ? kTrainsimVersion : r.version) << ", page by trainsim "
      << kTrainsimVersion
      << ". Speedup = throughput(N) / throughput(baseline); efficiency = speedup / (N / "
         "N_baseline); ttq = time-to-quality.</p>\n"
      << "<h2>Scaling</h2>\n"
      << plot << "<h2>Results</h2>\n<table>\n<tr>";
  for (const auto& c : r.columns) out << "<th>" << xml_escape(c) << "</th>";
  out << "</tr>\n";
  for (const auto& row : r.rows) {
    out << "<tr>";
    for (const auto& cell : row) {
      const bool text =
          !cell.empty() && !(std::isdigit(static_cast<unsigned char>(cell[0])) || cell[0] == '-');
      out << (text ? "<td class=\"text\">" : "<td>") << xml_escape(cell) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n<h2>Configs used</h2>\n";
  std::vector<std::string> files = r.config_files;
  if (r.kind == "sweep" && !files.empty()) {
    try {
      const models::SweepSpec spec = models::load_sweep_spec(resolve_config_path(files.front()));
      for (const std::string& f : {spec.cluster, spec.model, spec.job}) {
        if (!f.empty()) files.push_back(f);
      }
    } catch (const models::ConfigError&) {
      // The sweep file changed or moved since: show what can be read.
    }
  }
  for (const std::string& f : files) {
    const std::string text = read_text(f);
    out << "<details><summary>" << xml_escape(f) << "</summary><pre>"
        << xml_escape(text.empty() ? "(cannot be read from here)" : text) << "</pre></details>\n";
  }
  out << "</body>\n</html>\n";
}

int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "output,o", po::value<std::string>(), "write the page to FILE (default: standard output)");
  const po::variables_map vm = parse_options(args, options, "report", "result");
  if (vm.count("help")) {
    out << "usage: trainsim report RESULT [-o report.html]\n\n"
           "Writes one self-contained HTML page for a result: `trainsim predict --format json`\n"
           "output, or a sweep's CSV or JSON Lines file. The page has the scaling plots\n"
           "(speedup and efficiency against nodes with the ideal line, the step breakdown), every\n"
           "row, the configs used and the trainsim version; it needs nothing else to open.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  if (!vm.count("result")) throw UsageError("report: give the result file: trainsim report RESULT");
  const std::string source = vm["result"].as<std::string>();
  const ResultSet r = read_results(source);
  std::ostringstream page;
  write_report_html(page, r, source);
  write_output(output_path(vm), out, page.str());
  return kExitOk;
}

}  // namespace trainsim::cli
