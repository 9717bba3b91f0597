#include "tools/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "tools/plot_svg.h"
#include "tools/report_format.h"
#include "tools/result_schema.h"

namespace trainsim::cli {

namespace {

// printf into a string (several values of any printf type).
template <class... Args>
std::string format(const char* f, Args... args) {
  const int n = std::snprintf(nullptr, 0, f, args...);
  std::string out(static_cast<std::size_t>(std::max(0, n)), '\0');
  std::snprintf(out.data(), out.size() + 1, f, args...);
  return out;
}

const PlotPoint* point_at(const PlotSeries& s, int nodes) {
  for (const PlotPoint& p : s.points) {
    if (p.nodes == nodes) return &p;
  }
  return nullptr;
}

std::string letter_of(std::size_t i) {
  std::string out;
  for (std::size_t k = i + 1; k > 0; k = (k - 1) / 26) {
    out.insert(out.begin(), static_cast<char>('A' + (k - 1) % 26));
  }
  return out;
}

// One row of the comparison: a series at a node count, and A's point there (if any).
struct Row {
  int nodes;
  const ComparedSeries* series;
  const PlotPoint* point;
  const PlotPoint* base;  // A's point at these nodes (null for A itself or where A has none)
};

std::vector<Row> rows_of(const Comparison& c) {
  std::vector<Row> rows;
  for (const int n : c.nodes) {
    const PlotPoint* a = c.series.empty() ? nullptr : point_at(c.series.front().series, n);
    for (std::size_t i = 0; i < c.series.size(); ++i) {
      const PlotPoint* p = point_at(c.series[i].series, n);
      if (!p) continue;
      rows.push_back({n, &c.series[i], p, i == 0 ? nullptr : a});
    }
  }
  return rows;
}

// The breakdown's parts: their headings, in the order of PlotPoint::parts.
std::vector<std::string> part_labels() {
  std::vector<std::string> out;
  for (const ResultColumn* c : breakdown_parts()) out.emplace_back(c->label);
  return out;
}

std::string signed_text(double v, const char* format) {
  std::string s = printf_string(format, v);
  return v >= 0 && s.front() != '-' ? "+" + s : s;
}

std::string change_percent(const Row& r) {
  if (!r.base || !(r.base->throughput > 0)) return "";
  return signed_text(100.0 * (r.point->throughput / r.base->throughput - 1.0), "%.1f") + "%";
}

std::string change_points(const Row& r) {
  if (!r.base) return "";
  return signed_text(100.0 * (r.point->efficiency - r.base->efficiency), "%.1f");
}

std::string ms_with_change(double seconds, const double* base_seconds) {
  std::string s = printf_string("%.3f", seconds * 1e3);
  if (base_seconds) s += " (" + signed_text((seconds - *base_seconds) * 1e3, "%.3f") + ")";
  return s;
}

}  // namespace

Comparison compare_results(const std::vector<ResultSet>& results,
                           const std::vector<std::string>& sources) {
  Comparison c;
  std::set<int> nodes;
  for (std::size_t r = 0; r < results.size(); ++r) {
    const std::string file = std::filesystem::path(sources[r]).filename().string();
    for (const PlotSeries& s : results[r].series) {
      ComparedSeries cs;
      cs.letter = letter_of(c.series.size());
      cs.label = results[r].series.size() > 1 ? file + ": " + s.label : file + " (" + s.label + ")";
      cs.series = s;
      for (const PlotPoint& p : s.points) nodes.insert(p.nodes);
      c.series.push_back(std::move(cs));
    }
  }
  c.nodes.assign(nodes.begin(), nodes.end());
  return c;
}

void write_comparison_table(std::ostream& out, const Comparison& c) {
  for (const ComparedSeries& s : c.series) out << s.letter << " = " << s.label << "\n";
  const std::vector<std::string> parts = part_labels();
  out << "\n"
      << format("%5s  %-6s %18s %9s %11s %9s %20s", "nodes", "series", "throughput (ex/s)", "vs A",
                "efficiency", "vs A", "step (ms)");
  for (const std::string& p : parts) out << format(" %20s", p.c_str());
  out << "\n";
  for (const Row& r : rows_of(c)) {
    const double base_step = r.base ? r.base->step_time : 0.0;
    out << format("%5d  %-6s %18.0f %9s %10.1f%% %9s %20s", r.nodes, r.series->letter.c_str(),
                  r.point->throughput, change_percent(r).c_str(), 100.0 * r.point->efficiency,
                  change_points(r).c_str(),
                  ms_with_change(r.point->step_time, r.base ? &base_step : nullptr).c_str());
    for (int k = 0; k < PlotPoint::kParts; ++k) {
      out << format(
          " %20s", ms_with_change(r.point->parts[k], r.base ? &r.base->parts[k] : nullptr).c_str());
    }
    out << "\n";
  }
  out << "\nvs A: throughput change in %, efficiency change in points (each series' efficiency is\n"
         "over its own baseline; throughput compares them on one scale); times in ms per step,\n"
         "with the change from A in parentheses.\n";
}

void write_comparison_csv(std::ostream& out, const Comparison& c) {
  out << "nodes,series,label,throughput_examples_per_s,throughput_change,efficiency,"
         "efficiency_change,step_time_s,step_time_change_s";
  for (const ResultColumn* p : breakdown_parts()) {
    out << "," << p->csv_key() << "," << p->csv_key().substr(0, p->csv_key().size() - 2)
        << "_change_s";
  }
  out << "\n";
  const auto number = [](double v) { return printf_string("%.9g", v); };
  for (const Row& r : rows_of(c)) {
    std::string label = r.series->label;
    std::replace(label.begin(), label.end(), '"', '\'');
    out << r.nodes << "," << r.series->letter << ",\"" << label << "\","
        << number(r.point->throughput) << ","
        << (r.base && r.base->throughput > 0
                ? number(r.point->throughput / r.base->throughput - 1.0)
                : "")
        << "," << number(r.point->efficiency) << ","
        << (r.base ? number(r.point->efficiency - r.base->efficiency) : "") << ","
        << number(r.point->step_time) << ","
        << (r.base ? number(r.point->step_time - r.base->step_time) : "");
    for (int k = 0; k < PlotPoint::kParts; ++k) {
      out << "," << number(r.point->parts[k]) << ","
          << (r.base ? number(r.point->parts[k] - r.base->parts[k]) : "");
    }
    out << "\n";
  }
}

void write_comparison_html(std::ostream& out, const Comparison& c) {
  out << "<ul>\n";
  for (const ComparedSeries& s : c.series) {
    out << "<li><b>" << s.letter << "</b> = " << xml_escape(s.label) << "</li>\n";
  }
  out << "</ul>\n<table>\n<tr><th>nodes</th><th>series</th><th>throughput (ex/s)</th>"
         "<th>vs A</th><th>efficiency</th><th>vs A (points)</th><th>step (ms)</th>";
  for (const std::string& p : part_labels()) out << "<th>" << xml_escape(p) << " (ms)</th>";
  out << "</tr>\n";
  for (const Row& r : rows_of(c)) {
    const double base_step = r.base ? r.base->step_time : 0.0;
    out << "<tr><td>" << r.nodes << "</td><td class=\"text\">" << r.series->letter << "</td><td>"
        << printf_string("%.0f", r.point->throughput) << "</td><td>" << change_percent(r)
        << "</td><td>" << printf_string("%.1f%%", 100.0 * r.point->efficiency) << "</td><td>"
        << change_points(r) << "</td><td>"
        << ms_with_change(r.point->step_time, r.base ? &base_step : nullptr) << "</td>";
    for (int k = 0; k < PlotPoint::kParts; ++k) {
      out << "<td>" << ms_with_change(r.point->parts[k], r.base ? &r.base->parts[k] : nullptr)
          << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n<p>vs A: throughput change in %, efficiency change in points (each series' "
         "efficiency is over its own baseline); times in ms per step, with the change from A in "
         "parentheses.</p>\n";
}

}  // namespace trainsim::cli
