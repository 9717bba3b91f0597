// `trainsim report RESULT`: one self-contained HTML page (tables, plots, the configs used and the
// trainsim version) for a predict JSON result or a sweep's output.
#include <fstream>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/config/sweep_config.h"
#include "tools/cli.h"
#include "tools/compare.h"
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
    "summary{cursor:pointer;font-family:monospace}"
    "svg{max-width:100%;height:auto}";

std::string read_text(const std::string& path) {
  std::ifstream in(resolve_config_path(path), std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

namespace {

void write_page_head(std::ostream& out, const std::string& title) {
  out << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      << "<meta charset=\"utf-8\"/>\n<title>trainsim: " << xml_escape(title) << "</title>\n"
      << "<style>" << kStyle << "</style>\n</head>\n<body>\n";
}

void write_plot(std::ostream& out, const std::vector<PlotSeries>& series, const std::string& title,
                int baseline_nodes) {
  std::ostringstream svg;
  write_scaling_svg(svg, series, title, baseline_nodes);
  const std::string plot = svg.str();
  out << plot.substr(plot.find("<svg"));  // inline: no XML declaration
}

void write_rows(std::ostream& out, const ResultSet& r) {
  out << "<table>\n<tr>";
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
  out << "</table>\n";
}

// How the result was made (when it records it): the command, seed, settings, every config file
// with its content hash (and whether the file here still has it), and the scenario as
// simulated.
void write_provenance(std::ostream& out, const Provenance& p) {
  out << "<p>Made by <code>trainsim " << xml_escape(p.command);
  for (const std::string& a : p.arguments) out << " " << xml_escape(a);
  out << "</code>, seed " << p.seed << ".";
  if (!p.settings.empty()) {
    out << " Settings (--set):";
    for (const std::string& s : p.settings) out << " <code>" << xml_escape(s) << "</code>";
  }
  out << "</p>\n<table>\n<tr><th>file</th><th>role</th><th>SHA-1 when run</th><th>here now</th>"
         "</tr>\n";
  for (const ProvenanceFile& f : p.files) {
    const std::string now = file_sha1(f.path);
    out << "<tr><td class=\"text\"><code>" << xml_escape(f.path)
        << "</code></td><td class=\"text\">" << xml_escape(f.role)
        << "</td><td class=\"text\"><code>" << xml_escape(f.sha1)
        << "</code></td><td class=\"text\">"
        << (now.empty()     ? "cannot be read"
            : now == f.sha1 ? "the same"
                            : "changed since")
        << "</td></tr>\n";
  }
  out << "</table>\n";
  if (!p.resolved.empty()) {
    out << "<details><summary>the scenario as simulated (every key, --set applied)</summary><pre>"
        << xml_escape(p.resolved) << "</pre></details>\n";
  }
}

void write_configs(std::ostream& out, const ResultSet& r) {
  if (r.provenance) write_provenance(out, *r.provenance);
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
}

constexpr const char* kDefinitions =
    "Speedup = throughput(N) / throughput(baseline); efficiency = speedup / (N / N_baseline); "
    "ttq = time-to-quality.";

}  // namespace

void write_report_html(std::ostream& out, const ResultSet& r, const std::string& source) {
  write_page_head(out, r.title);
  out << "<h1>trainsim " << xml_escape(r.kind) << ": " << xml_escape(r.title) << "</h1>\n"
      << "<p>From <code>" << xml_escape(source) << "</code>; results by trainsim "
      << xml_escape(r.version.empty() ? kTrainsimVersion : r.version) << ", page by trainsim "
      << kTrainsimVersion << ". " << kDefinitions << "</p>\n"
      << "<h2>Scaling</h2>\n";
  write_plot(out, r.series, r.title, r.baseline_nodes);
  out << "<h2>Results</h2>\n";
  write_rows(out, r);
  out << "<h2>Configs used</h2>\n";
  write_configs(out, r);
  out << "</body>\n</html>\n";
}

void write_comparison_report_html(std::ostream& out, const std::vector<ResultSet>& results,
                                  const std::vector<std::string>& sources) {
  const Comparison c = compare_results(results, sources);
  std::vector<PlotSeries> series;
  for (const ComparedSeries& s : c.series) {
    series.push_back(s.series);
    series.back().label = s.letter + ": " + s.label;
  }
  std::string title = "comparison of";
  for (const std::string& s : sources) title += " " + s;
  write_page_head(out, title);
  out << "<h1>trainsim comparison</h1>\n<p>Page by trainsim " << kTrainsimVersion << ". "
      << kDefinitions << "</p>\n<h2>Scaling</h2>\n";
  write_plot(out, series, "comparison", results.front().baseline_nodes);
  out << "<h2>Side by side</h2>\n";
  write_comparison_html(out, c);
  for (std::size_t i = 0; i < results.size(); ++i) {
    out << "<h2>" << xml_escape(sources[i]) << "</h2>\n<p>" << xml_escape(results[i].kind) << ": "
        << xml_escape(results[i].title) << "; results by trainsim "
        << xml_escape(results[i].version.empty() ? kTrainsimVersion : results[i].version)
        << "</p>\n";
    write_rows(out, results[i]);
    out << "<h3>Configs used</h3>\n";
    write_configs(out, results[i]);
  }
  out << "</body>\n</html>\n";
}

int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("options");
  options.add_options()("help,h", "show this help")(
      "output,o", po::value<std::string>(), "write the page to FILE (default: standard output)");
  const po::variables_map vm = parse_options_list(args, options, "report", "results");
  if (vm.count("help")) {
    out << "usage: trainsim report RESULT [RESULT...] [-o report.html]\n\n"
           "Writes one self-contained HTML page for a result: `trainsim predict --format json`\n"
           "output, or a sweep's CSV or JSON Lines file. The page has the scaling plots\n"
           "(speedup and efficiency against nodes with the ideal line, the step breakdown), every\n"
           "row, the configs used and the trainsim version; it needs nothing else to open.\n"
           "Given several results, it plots every series together and adds `trainsim compare`'s\n"
           "table (each series against the first at the same node counts).\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  if (!vm.count("results")) {
    throw UsageError("report: give the result file: trainsim report RESULT");
  }
  const auto sources = vm["results"].as<std::vector<std::string>>();
  std::vector<ResultSet> results;
  for (const std::string& s : sources) results.push_back(read_results(s));
  std::ostringstream page;
  if (results.size() == 1) {
    write_report_html(page, results.front(), sources.front());
  } else {
    write_comparison_report_html(page, results, sources);
  }
  write_output(output_path(vm), out, page.str());
  return kExitOk;
}

}  // namespace trainsim::cli
