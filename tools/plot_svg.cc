#include "tools/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tools/result_schema.h"

namespace trainsim::cli {

namespace {

// Colour-blind-safe palette (Okabe-Ito) for series, and one colour per breakdown part.
const char* const kSeriesColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#F0E442", "#000000"};
// The breakdown's parts by name, in their order (result_schema.h).
std::string part_name(int part) { return std::string(breakdown_parts().at(part)->name); }
const char* const kPartColours[PlotPoint::kParts] = {"#009E73", "#D55E00", "#E69F00",
                                                     "#56B4E9", "#CC79A7", "#F0E442"};

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  return buffer;
}

struct Panel {
  double x, y, w, h;  // plot area in SVG units
};

// Log2 x axis over [lo, hi] node counts.
struct XAxis {
  double lo, hi;
  double at(const Panel& p, double nodes) const {
    if (hi <= lo) return p.x + p.w / 2;
    return p.x + p.w * (std::log2(nodes) - std::log2(lo)) / (std::log2(hi) - std::log2(lo));
  }
};

void frame(std::ostream& out, const Panel& p, const std::string& title, const std::string& ylabel) {
  out << "<rect x=\"" << num(p.x) << "\" y=\"" << num(p.y) << "\" width=\"" << num(p.w)
      << "\" height=\"" << num(p.h) << "\" fill=\"none\" stroke=\"#444\"/>\n";
  out << "<text x=\"" << num(p.x + p.w / 2) << "\" y=\"" << num(p.y - 10)
      << "\" text-anchor=\"middle\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
  out << "<text transform=\"translate(" << num(p.x - 45) << "," << num(p.y + p.h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(ylabel) << "</text>\n";
  out << "<text x=\"" << num(p.x + p.w / 2) << "\" y=\"" << num(p.y + p.h + 35)
      << "\" text-anchor=\"middle\">nodes</text>\n";
}

void x_ticks(std::ostream& out, const Panel& p, const XAxis& x, const std::vector<int>& nodes) {
  for (const int n : nodes) {
    const double px = x.at(p, n);
    out << "<line x1=\"" << num(px) << "\" y1=\"" << num(p.y + p.h) << "\" x2=\"" << num(px)
        << "\" y2=\"" << num(p.y + p.h + 5) << "\" stroke=\"#444\"/>\n";
    out << "<text x=\"" << num(px) << "\" y=\"" << num(p.y + p.h + 18)
        << "\" text-anchor=\"middle\">" << n << "</text>\n";
  }
}

// Five ticks from 0 to `top`, labelled with value x `scale` (100 for percentages).
void y_ticks(std::ostream& out, const Panel& p, double top, const char* format,
             double scale = 1.0) {
  for (int i = 0; i <= 4; ++i) {
    const double v = top * i / 4 * scale;
    const double py = p.y + p.h - p.h * i / 4;
    char label[32];
    std::snprintf(label, sizeof label, format, v);
    out << "<line x1=\"" << num(p.x) << "\" y1=\"" << num(py) << "\" x2=\"" << num(p.x + p.w)
        << "\" y2=\"" << num(py) << "\" stroke=\"#ddd\"/>\n";
    out << "<text x=\"" << num(p.x - 6) << "\" y=\"" << num(py + 4) << "\" text-anchor=\"end\">"
        << label << "</text>\n";
  }
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
  double top_speedup = 1.0;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      nodes.push_back(p.nodes);
      if (std::isfinite(p.speedup)) top_speedup = std::max(top_speedup, p.speedup);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.empty()) nodes.push_back(std::max(1, baseline_nodes));
  const XAxis x{static_cast<double>(nodes.front()), static_cast<double>(nodes.back())};
  const double ideal_top = static_cast<double>(nodes.back()) / std::max(1, baseline_nodes);
  top_speedup = std::max(top_speedup, ideal_top) * 1.05;

  const double width = 1000,
               legend_rows = static_cast<double>(std::min<std::size_t>(series.size(), 8));
  const double height = 760 + 18 * legend_rows;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << width / 2
      << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" "
         "font-weight=\"bold\">"
      << xml_escape(title) << "</text>\n";

  // Speedup and efficiency.
  const Panel sp{70, 70, 380, 260};
  const Panel ef{580, 70, 380, 260};
  frame(out, sp, "speedup over " + std::to_string(baseline_nodes) + " node(s)", "speedup");
  frame(out, ef, "efficiency = speedup / (N / N_baseline)", "efficiency");
  y_ticks(out, sp, top_speedup, "%.1fx");
  y_ticks(out, ef, 1.2, "%.0f%%", 100.0);
  x_ticks(out, sp, x, nodes);
  x_ticks(out, ef, x, nodes);
  auto sy = [&](double v) { return sp.y + sp.h - sp.h * v / top_speedup; };
  auto ey = [&](double v) { return ef.y + ef.h - ef.h * v / 1.2; };
  // Ideal: linear scaling.
  out << "<polyline fill=\"none\" stroke=\"#888\" stroke-dasharray=\"6,4\" points=\"";
  for (const int n : nodes) {
    out << num(x.at(sp, n)) << "," << num(sy(static_cast<double>(n) / std::max(1, baseline_nodes)))
        << " ";
  }
  out << "\"/>\n<polyline fill=\"none\" stroke=\"#888\" stroke-dasharray=\"6,4\" points=\""
      << num(ef.x) << "," << num(ey(1.0)) << " " << num(ef.x + ef.w) << "," << num(ey(1.0))
      << "\"/>\n";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kSeriesColours[i % 8];
    std::ostringstream s_line, e_line;
    for (const auto& p : series[i].points) {
      if (!std::isfinite(p.speedup)) continue;
      s_line << num(x.at(sp, p.nodes)) << "," << num(sy(p.speedup)) << " ";
      e_line << num(x.at(ef, p.nodes)) << "," << num(ey(std::min(p.efficiency, 1.2))) << " ";
      out << "<circle cx=\"" << num(x.at(sp, p.nodes)) << "\" cy=\"" << num(sy(p.speedup))
          << "\" r=\"3\" fill=\"" << colour << "\"/>\n";
      out << "<circle cx=\"" << num(x.at(ef, p.nodes)) << "\" cy=\""
          << num(ey(std::min(p.efficiency, 1.2))) << "\" r=\"3\" fill=\"" << colour << "\"/>\n";
    }
    out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\""
        << s_line.str() << "\"/>\n";
    out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\""
        << e_line.str() << "\"/>\n";
  }

  // Where the step goes, for the first series: a stacked bar per node count (share of the step).
  const Panel br{70, 420, 700, 260};
  frame(out, br, "step breakdown" + (series.empty() ? std::string() : ": " + series.front().label),
        "share of the step");
  y_ticks(out, br, 1.0, "%.0f%%", 100.0);
  if (!series.empty()) {
    const auto& pts = series.front().points;
    const double slot = br.w / std::max<std::size_t>(1, pts.size());
    for (std::size_t k = 0; k < pts.size(); ++k) {
      double total = 0;
      for (const double v : pts[k].parts) total += v;
      double y = br.y + br.h;
      const double bx = br.x + slot * (static_cast<double>(k) + 0.2);
      for (int part = 0; part < PlotPoint::kParts; ++part) {
        const double h = total > 0 ? br.h * pts[k].parts[part] / total : 0.0;
        y -= h;
        out << "<rect x=\"" << num(bx) << "\" y=\"" << num(y) << "\" width=\"" << num(slot * 0.6)
            << "\" height=\"" << num(h) << "\" fill=\"" << kPartColours[part] << "\"><title>"
            << part_name(part) << ": " << num(100 * (total > 0 ? pts[k].parts[part] / total : 0))
            << "%</title></rect>\n";
      }
      out << "<text x=\"" << num(bx + slot * 0.3) << "\" y=\"" << num(br.y + br.h + 18)
          << "\" text-anchor=\"middle\">" << pts[k].nodes << "</text>\n";
    }
  }
  for (int part = 0; part < PlotPoint::kParts; ++part) {
    const double ly = br.y + 20 + 22 * part;
    out << "<rect x=\"" << num(br.x + br.w + 25) << "\" y=\"" << num(ly - 10)
        << "\" width=\"14\" height=\"14\" fill=\"" << kPartColours[part] << "\"/>\n";
    out << "<text x=\"" << num(br.x + br.w + 45) << "\" y=\"" << num(ly + 2) << "\">"
        << part_name(part) << "</text>\n";
  }
  // Series legend (first 8), under the plots.
  for (std::size_t i = 0; i < series.size() && i < 8; ++i) {
    const double ly = 735 + 18 * static_cast<double>(i);
    out << "<line x1=\"70\" y1=\"" << num(ly) << "\" x2=\"100\" y2=\"" << num(ly) << "\" stroke=\""
        << kSeriesColours[i] << "\" stroke-width=\"3\"/>\n";
    out << "<text x=\"108\" y=\"" << num(ly + 4) << "\">" << xml_escape(series[i].label)
        << "</text>\n";
  }
  if (series.size() > 8) {
    out << "<text x=\"70\" y=\"" << num(735 + 18 * 8) << "\">(and " << series.size() - 8
        << " more series)</text>\n";
  }
  out << "<line x1=\"600\" y1=\"735\" x2=\"630\" y2=\"735\" stroke=\"#888\" "
         "stroke-dasharray=\"6,4\"/><text x=\"638\" y=\"739\">ideal (linear scaling)</text>\n";
  out << "</svg>\n";
}

}  // namespace trainsim::cli
