#include "tools/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <utility>

#include "tools/result_schema.h"

namespace trainsim::cli {

namespace {

// Series styles: the Okabe-Ito colour-blind-safe palette, then dash patterns and marker shapes,
// so every series (not just eight) has a style of its own.
const char* const kSeriesColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000", "#999933"};
const char* const kDashes[] = {"", "7,3", "2,3", "10,3,2,3"};
constexpr int kMarkers = 4;  // circle, square, triangle, diamond
// The breakdown's parts by name, in their order (result_schema.h).
std::string part_name(int part) { return std::string(breakdown_parts().at(part)->name); }
const char* const kPartColours[PlotPoint::kParts] = {"#009E73", "#D55E00", "#E69F00",
                                                     "#56B4E9", "#CC79A7", "#F0E442"};

struct Style {
  const char* colour;
  const char* dash;
  int marker;
};
Style style_of(std::size_t i) {
  return {kSeriesColours[i % 8], kDashes[(i / 8) % 4], static_cast<int>((i / 32 + i) % kMarkers)};
}

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  return buffer;
}

void marker(std::ostream& out, const Style& st, double x, double y) {
  const double r = 3.5;
  switch (st.marker) {
    case 0:
      out << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << r << "\"";
      break;
    case 1:
      out << "<rect x=\"" << num(x - r) << "\" y=\"" << num(y - r) << "\" width=\"" << 2 * r
          << "\" height=\"" << 2 * r << "\"";
      break;
    case 2:
      out << "<polygon points=\"" << num(x) << "," << num(y - r) << " " << num(x - r) << ","
          << num(y + r) << " " << num(x + r) << "," << num(y + r) << "\"";
      break;
    default:
      out << "<polygon points=\"" << num(x) << "," << num(y - r) << " " << num(x + r) << ","
          << num(y) << " " << num(x) << "," << num(y + r) << " " << num(x - r) << "," << num(y)
          << "\"";
  }
  out << " fill=\"" << st.colour << "\"/>\n";
}

struct Panel {
  double x, y, w, h;  // plot area in SVG units
};

// An axis over [lo, hi]: logarithmic (a power law is a straight line) or linear.
struct Axis {
  double lo, hi;
  bool log;
  double fraction(double v) const {
    if (hi <= lo) return 0.5;
    if (log) return (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
    return (v - lo) / (hi - lo);
  }
  double x(const Panel& p, double v) const { return p.x + p.w * fraction(v); }
  double y(const Panel& p, double v) const { return p.y + p.h - p.h * fraction(v); }
};

// A log axis over [lo, hi], or over a decade from 1 where those are not positive and finite (a
// result without such values).
Axis log_axis(double lo, double hi) {
  if (!(lo > 0) || !std::isfinite(lo)) lo = 1;
  if (!(hi > lo) || !std::isfinite(hi)) hi = lo * 10;
  return {lo, hi, true};
}

// Tick values a reader takes in at a glance: 1, 2, 5 x 10^k on a log axis (only powers of ten
// when there are many decades), multiples of 1, 2 or 5 x 10^k on a linear one.
std::vector<double> nice_ticks(const Axis& a) {
  std::vector<double> ticks;
  if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || !(a.hi > a.lo) || (a.log && !(a.lo > 0))) {
    return ticks;
  }
  if (a.log) {
    const int first = static_cast<int>(std::floor(std::log10(a.lo)));
    const int last = static_cast<int>(std::ceil(std::log10(a.hi)));
    const bool many = last - first > 4;
    const int every = std::max(1, (last - first) / 8);  // at most about eight decades labelled
    for (int k = first; k <= last; k += every) {
      for (const double m : {1.0, 2.0, 5.0}) {
        if (many && m != 1.0) continue;
        const double v = m * std::pow(10.0, k);
        if (v >= a.lo * (1 - 1e-9) && v <= a.hi * (1 + 1e-9)) ticks.push_back(v);
      }
    }
    if (ticks.size() < 2) ticks = {a.lo, a.hi};
    return ticks;
  }
  const double span = a.hi - a.lo;
  const double raw = span / 5;
  if (!(raw > 0) || !std::isfinite(raw)) return ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  for (double v = std::ceil(a.lo / step) * step; v <= a.hi + 1e-9 * span; v += step) {
    ticks.push_back(std::abs(v) < 1e-12 * span ? 0.0 : v);
  }
  return ticks;
}

// 1.5k, 20M: a compact number with an SI suffix.
std::string si(double v) {
  const char* suffix = "";
  for (const auto& [scale, s] : {std::pair{1e9, "G"}, {1e6, "M"}, {1e3, "k"}}) {
    if (std::abs(v) >= scale) {
      v /= scale;
      suffix = s;
      break;
    }
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g%s", v, suffix);
  return buffer;
}

void frame(std::ostream& out, const Panel& p, const std::string& title, const std::string& ylabel,
           const std::string& xlabel, double xlabel_gap = 34) {
  out << "<rect x=\"" << num(p.x) << "\" y=\"" << num(p.y) << "\" width=\"" << num(p.w)
      << "\" height=\"" << num(p.h) << "\" fill=\"none\" stroke=\"#444\"/>\n";
  out << "<text x=\"" << num(p.x + p.w / 2) << "\" y=\"" << num(p.y - 10)
      << "\" text-anchor=\"middle\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
  out << "<text transform=\"translate(" << num(p.x - 50) << "," << num(p.y + p.h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(ylabel) << "</text>\n";
  out << "<text x=\"" << num(p.x + p.w / 2) << "\" y=\"" << num(p.y + p.h + xlabel_gap)
      << "\" text-anchor=\"middle\">" << xml_escape(xlabel) << "</text>\n";
}

void x_ticks(std::ostream& out, const Panel& p, const Axis& x, const std::vector<int>& nodes) {
  for (const int n : nodes) {
    const double px = x.x(p, n);
    out << "<line x1=\"" << num(px) << "\" y1=\"" << num(p.y) << "\" x2=\"" << num(px) << "\" y2=\""
        << num(p.y + p.h) << "\" stroke=\"#eee\"/>\n";
    out << "<text x=\"" << num(px) << "\" y=\"" << num(p.y + p.h + 16)
        << "\" text-anchor=\"middle\">" << n << "</text>\n";
  }
}

// Grid lines and labels at the axis's nice ticks; `label` formats a value.
template <class F>
void y_ticks(std::ostream& out, const Panel& p, const Axis& y, F label) {
  for (const double v : nice_ticks(y)) {
    const double py = y.y(p, v);
    out << "<line x1=\"" << num(p.x) << "\" y1=\"" << num(py) << "\" x2=\"" << num(p.x + p.w)
        << "\" y2=\"" << num(py) << "\" stroke=\"#ddd\"/>\n";
    out << "<text x=\"" << num(p.x - 6) << "\" y=\"" << num(py + 4) << "\" text-anchor=\"end\">"
        << xml_escape(label(v)) << "</text>\n";
  }
}

// One series as a line with markers, through the points `value` gives (NaN or <= 0 on a log
// axis: skipped).
template <class F>
void series_line(std::ostream& out, const Panel& p, const Axis& x, const Axis& y,
                 const PlotSeries& s, const Style& st, F value) {
  std::ostringstream line;
  for (const PlotPoint& q : s.points) {
    const double v = value(q);
    if (!std::isfinite(v) || (y.log && v <= 0) || q.nodes < 1) continue;
    const double clamped = std::clamp(v, y.lo, y.hi);
    line << num(x.x(p, q.nodes)) << "," << num(y.y(p, clamped)) << " ";
    marker(out, st, x.x(p, q.nodes), y.y(p, clamped));
  }
  out << "<polyline fill=\"none\" stroke=\"" << st.colour << "\" stroke-width=\"2\"";
  if (*st.dash) out << " stroke-dasharray=\"" << st.dash << "\"";
  out << " points=\"" << line.str() << "\"><title>" << xml_escape(s.label)
      << "</title></polyline>\n";
}

// The range of `value` over every point of every series (positive values only for a log axis).
template <class F>
std::pair<double, double> range_of(const std::vector<PlotSeries>& series, F value, bool log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : series) {
    for (const auto& q : s.points) {
      const double v = value(q);
      if (!std::isfinite(v) || (log && v <= 0)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!std::isfinite(lo)) return {1, 10};
  return {lo, hi};
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void write_scaling_svg(std::ostream& out, const std::vector<PlotSeries>& series,
                       const std::string& title, int baseline_nodes) {
  std::vector<int> nodes;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      if (p.nodes >= 1) nodes.push_back(p.nodes);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.empty()) nodes.push_back(std::max(1, baseline_nodes));
  const double base = std::max(1, baseline_nodes);
  const Axis x{static_cast<double>(nodes.front()) / 1.15, static_cast<double>(nodes.back()) * 1.15,
               true};

  // Speedup, log-log: linear scaling is the straight dashed line.
  auto [s_lo, s_hi] = range_of(
      series, [](const PlotPoint& q) { return q.speedup; }, true);
  s_lo = std::min({s_lo, nodes.front() / base, 1.0});
  s_hi = std::max(s_hi, nodes.back() / base);
  const Axis sy = log_axis(s_lo / 1.2, s_hi * 1.2);
  // Throughput, log-log: absolute, so series with different baselines compare honestly.
  const auto [t_lo, t_hi] = range_of(
      series, [](const PlotPoint& q) { return q.throughput; }, true);
  const Axis ty = log_axis(t_lo / 1.3, t_hi * 1.3);
  // Efficiency, linear.
  const auto [e_lo, e_hi] = range_of(
      series, [](const PlotPoint& q) { return q.efficiency; }, false);
  (void)e_lo;
  const Axis ey{0.0, std::isfinite(e_hi) ? std::max(1.1, e_hi * 1.05) : 1.1, false};

  // The breakdown: per node count, a stacked bar per series, in ms per step.
  double top_ms = 0;
  for (const auto& s : series) {
    for (const auto& q : s.points) {
      double total = 0;
      for (const double v : q.parts) total += v;
      top_ms = std::max(top_ms, total * 1e3);
    }
  }
  const Axis by{0.0, top_ms > 0 && std::isfinite(top_ms) ? top_ms * 1.08 : 1.0, false};

  const double width = 1140;
  const std::size_t legend_columns = 2;
  const std::size_t legend_rows = (series.size() + legend_columns - 1) / legend_columns;
  const double legend_top = 760;
  const double height = legend_top + 22 + 18 * static_cast<double>(legend_rows) + 20;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2
      << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">"
      << xml_escape(title) << "</text>\n";

  const Panel sp{75, 70, 290, 250};
  const Panel tp{450, 70, 290, 250};
  const Panel ep{825, 70, 290, 250};
  frame(out, sp, "speedup over " + std::to_string(baseline_nodes) + " node(s)", "speedup (log)",
        "nodes (log)");
  frame(out, tp, "throughput", "examples/s (log)", "nodes (log)");
  frame(out, ep, "efficiency = speedup / (N / N_baseline)", "efficiency", "nodes (log)");
  for (const Panel* p : {&sp, &tp, &ep}) x_ticks(out, *p, x, nodes);
  y_ticks(out, sp, sy, [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%gx", v);
    return std::string(b);
  });
  y_ticks(out, tp, ty, [](double v) { return si(v); });
  y_ticks(out, ep, ey, [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f%%", 100 * v);
    return std::string(b);
  });
  // Ideal: linear scaling, a straight line on log-log axes; 100% efficiency.
  out << "<line x1=\"" << num(x.x(sp, nodes.front())) << "\" y1=\""
      << num(sy.y(sp, nodes.front() / base)) << "\" x2=\"" << num(x.x(sp, nodes.back()))
      << "\" y2=\"" << num(sy.y(sp, nodes.back() / base))
      << "\" stroke=\"#888\" stroke-dasharray=\"6,4\"><title>ideal (linear "
         "scaling)</title></line>\n"
      << "<line x1=\"" << num(ep.x) << "\" y1=\"" << num(ey.y(ep, 1.0)) << "\" x2=\""
      << num(ep.x + ep.w) << "\" y2=\"" << num(ey.y(ep, 1.0))
      << "\" stroke=\"#888\" stroke-dasharray=\"6,4\"/>\n";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Style st = style_of(i);
    series_line(out, sp, x, sy, series[i], st, [](const PlotPoint& q) { return q.speedup; });
    series_line(out, tp, x, ty, series[i], st, [](const PlotPoint& q) { return q.throughput; });
    series_line(out, ep, x, ey, series[i], st, [](const PlotPoint& q) { return q.efficiency; });
  }

  // Where the step goes, in ms, every series: a cluster per node count, a stacked bar per series
  // (numbered as in the legend).
  const Panel bp{75, 400, 860, 300};
  frame(out, bp, "step breakdown per series (ms per step)", "ms per step", "nodes", 44);
  y_ticks(out, bp, by, [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  });
  const double slot = bp.w / static_cast<double>(nodes.size());
  const double bar = std::min(40.0, slot * 0.8 / std::max<std::size_t>(1, series.size()));
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const double cluster_x =
        bp.x + slot * static_cast<double>(k) + (slot - bar * series.size()) / 2;
    for (std::size_t i = 0; i < series.size(); ++i) {
      const PlotPoint* q = nullptr;
      for (const auto& p : series[i].points) {
        if (p.nodes == nodes[k]) q = &p;
      }
      if (!q) continue;
      const double bx = cluster_x + bar * static_cast<double>(i);
      double below = 0;
      for (int part = 0; part < PlotPoint::kParts; ++part) {
        const double ms = q->parts[part] * 1e3;
        const double y0 = by.y(bp, below), y1 = by.y(bp, below + ms);
        below += ms;
        if (ms <= 0) continue;
        out << "<rect x=\"" << num(bx) << "\" y=\"" << num(y1) << "\" width=\"" << num(bar * 0.9)
            << "\" height=\"" << num(y0 - y1) << "\" fill=\"" << kPartColours[part] << "\"><title>"
            << xml_escape(series[i].label) << ", " << nodes[k] << " nodes: " << part_name(part)
            << " " << num(ms) << " ms</title></rect>\n";
      }
      // The series' number under its bar, and a cap in its colour.
      out << "<rect x=\"" << num(bx) << "\" y=\"" << num(by.y(bp, below) - 3) << "\" width=\""
          << num(bar * 0.9) << "\" height=\"3\" fill=\"" << style_of(i).colour << "\"/>\n";
      if (series.size() > 1 && bar >= 9) {
        out << "<text x=\"" << num(bx + bar * 0.45) << "\" y=\"" << num(bp.y + bp.h + 12)
            << "\" text-anchor=\"middle\" font-size=\"9\">" << i + 1 << "</text>\n";
      }
    }
    out << "<text x=\"" << num(bp.x + slot * (static_cast<double>(k) + 0.5)) << "\" y=\""
        << num(bp.y + bp.h + 26) << "\" text-anchor=\"middle\">" << nodes[k] << "</text>\n";
  }
  for (int part = 0; part < PlotPoint::kParts; ++part) {
    const double ly = bp.y + 20 + 22 * part;
    out << "<rect x=\"" << num(bp.x + bp.w + 25) << "\" y=\"" << num(ly - 10)
        << "\" width=\"14\" height=\"14\" fill=\"" << kPartColours[part] << "\"/>\n";
    out << "<text x=\"" << num(bp.x + bp.w + 45) << "\" y=\"" << num(ly + 2) << "\">"
        << part_name(part) << "</text>\n";
  }

  // Every series in the legend, numbered as under the bars, in two columns; the ideal line.
  out << "<line x1=\"75\" y1=\"" << num(legend_top) << "\" x2=\"105\" y2=\"" << num(legend_top)
      << "\" stroke=\"#888\" stroke-dasharray=\"6,4\"/><text x=\"113\" y=\"" << num(legend_top + 4)
      << "\">ideal (linear scaling)</text>\n";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Style st = style_of(i);
    const double lx = 75 + 540 * static_cast<double>(i % legend_columns);
    const double ly = legend_top + 22 + 18 * static_cast<double>(i / legend_columns);
    out << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly) << "\" x2=\"" << num(lx + 30)
        << "\" y2=\"" << num(ly) << "\" stroke=\"" << st.colour << "\" stroke-width=\"2\"";
    if (*st.dash) out << " stroke-dasharray=\"" << st.dash << "\"";
    out << "/>\n";
    marker(out, st, lx + 15, ly);
    out << "<text class=\"series-label\" x=\"" << num(lx + 38) << "\" y=\"" << num(ly + 4) << "\">"
        << i + 1 << ". " << xml_escape(series[i].label) << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace trainsim::cli
