#include "tools/result_reader.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/spec/config_error.h"
#include "tools/report_format.h"

namespace trainsim::cli {

namespace {

using nlohmann::json;

std::string num(double v, const char* format = "%.6g") { return printf_string(format, v); }

double number_or_nan(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
}

const char* const kParts[] = {"compute", "communication_stall", "load_imbalance", "input_stall",
                              "checkpoint"};

PlotPoint plot_point(const json& p) {
  PlotPoint q;
  q.nodes = p.value("nodes", 0);
  q.speedup = number_or_nan(p, "speedup");
  q.efficiency = number_or_nan(p, "efficiency");
  if (p.contains("breakdown_s")) {
    for (int i = 0; i < 5; ++i) q.parts[i] = p["breakdown_s"].value(kParts[i], 0.0);
  }
  return q;
}

const std::vector<std::string> kPointColumns = {
    "nodes",      "GPUs",       "global batch", "step (ms)",   "throughput (ex/s)",
    "speedup",    "efficiency", "ttq (h)",      "ttq speedup", "compute",
    "comm stall", "imbalance",  "input",        "ckpt",        "dominant"};

std::vector<std::string> point_cells(const json& p) {
  auto ms = [&](const char* part) { return num(p["breakdown_s"].value(part, 0.0) * 1e3, "%.3f"); };
  return {std::to_string(p.value("nodes", 0)),
          std::to_string(p.value("gpus", 0)),
          num(p.value("global_batch", 0.0), "%.0f"),
          num(p.value("step_time_s", 0.0) * 1e3, "%.3f"),
          num(p.value("throughput_examples_per_s", 0.0), "%.0f"),
          num(p.value("speedup", 0.0), "%.2fx"),
          num(100 * p.value("efficiency", 0.0), "%.1f%%"),
          p.contains("time_to_quality_s") ? num(p["time_to_quality_s"].get<double>() / 3600, "%.3g")
                                          : "-",
          num(p.value("ttq_speedup", 0.0), "%.2fx"),
          ms("compute"),
          ms("communication_stall"),
          ms("load_imbalance"),
          ms("input_stall"),
          ms("checkpoint"),
          p.value("dominant", std::string())};
}

// Splits one CSV line (fields may be quoted, with "" for a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// A CSV row of a sweep as the JSON row the JSON Lines form would hold.
json csv_row(const std::vector<std::string>& columns, const std::vector<std::string>& fields,
             const std::vector<std::string>& axes) {
  json row;
  std::map<std::string, std::string> f;
  for (std::size_t i = 0; i < columns.size() && i < fields.size(); ++i) f[columns[i]] = fields[i];
  row["index"] = std::stoull(f["index"]);
  for (const auto& a : axes) row["axes"][a] = f[a];
  if (!f["error"].empty() || f["gpus"].empty()) {
    row["error"] = f["error"];
    return row;
  }
  row["nodes"] = std::stoi(f["nodes"]);
  row["gpus"] = std::stoi(f["gpus"]);
  for (const char* k : {"global_batch", "step_time_s", "throughput_examples_per_s", "speedup",
                        "efficiency", "ttq_speedup"}) {
    row[k] = std::stod(f[k]);
  }
  if (!f["time_to_quality_s"].empty()) row["time_to_quality_s"] = std::stod(f["time_to_quality_s"]);
  for (int i = 0; i < 5; ++i)
    row["breakdown_s"][kParts[i]] = std::stod(f[std::string(kParts[i]) + "_s"]);
  row["dominant"] = f["dominant"];
  return row;
}

}  // namespace

ResultSet parse_results(const std::string& text, const std::string& name) {
  ResultSet r;
  const std::string first = text.substr(0, text.find('\n'));
  try {
    if (first.rfind("# trainsim sweep ", 0) == 0 ||
        first.find("\"trainsim_sweep\"") != std::string::npos) {
      r.kind = "sweep";
      std::istringstream lines(text);
      std::string line;
      std::getline(lines, line);
      std::vector<std::string> axes;
      std::vector<json> rows;
      const bool csv = line[0] == '#';
      const json header = json::parse(csv ? line.substr(line.find('{')) : line);
      r.title = header.value("trainsim_sweep", std::string());
      r.version = header.value("version", std::string());
      r.baseline_nodes = header.value("baseline_nodes", 1);
      if (header.contains("file")) r.config_files.push_back(header["file"]);
      if (csv) {
        std::getline(lines, line);
        const auto columns = csv_fields(line);
        for (std::size_t i = 1; i < columns.size() && columns[i] != "gpus"; ++i)
          axes.push_back(columns[i]);
        while (std::getline(lines, line)) {
          if (!line.empty()) rows.push_back(csv_row(columns, csv_fields(line), axes));
        }
      } else {
        for (const auto& a : header["axes"]) axes.push_back(a);
        while (std::getline(lines, line)) {
          if (!line.empty()) rows.push_back(json::parse(line));
        }
      }
      r.columns = {"index"};
      for (const auto& a : axes) r.columns.push_back(a);
      for (const auto& c : kPointColumns) r.columns.push_back(c);
      r.columns.push_back("error");
      std::map<std::string, std::size_t> series_of;
      for (const json& row : rows) {
        std::vector<std::string> cells = {std::to_string(row["index"].get<std::size_t>())};
        std::string label;
        for (const auto& a : axes) {
          const std::string v = row["axes"].value(a, std::string());
          cells.push_back(v);
          if (a != "nodes") label += (label.empty() ? "" : ", ") + a + "=" + v;
        }
        if (row.contains("error")) {
          cells.resize(r.columns.size() - 1, "");
          cells.push_back(row["error"]);
        } else {
          for (auto& c : point_cells(row)) cells.push_back(std::move(c));
          cells.push_back("");
          if (label.empty()) label = r.title;
          auto it = series_of.find(label);
          if (it == series_of.end()) {
            it = series_of.emplace(label, r.series.size()).first;
            r.series.push_back({label, {}});
          }
          r.series[it->second].points.push_back(plot_point(row));
        }
        r.rows.push_back(std::move(cells));
      }
      for (auto& s : r.series) {
        std::sort(s.points.begin(), s.points.end(),
                  [](const PlotPoint& a, const PlotPoint& b) { return a.nodes < b.nodes; });
      }
      return r;
    }
    const json doc = json::parse(text);
    if (!doc.contains("points")) {
      throw models::ConfigError(name, 1, 1, "",
                                "not a trainsim predict JSON result or sweep output");
    }
    r.kind = "predict";
    r.version = doc.value("trainsim_version", std::string());
    r.baseline_nodes = doc.value("baseline_nodes", 1);
    const std::string model = doc["model"].value("name", std::string());
    const std::string cluster = doc["cluster"].value("name", std::string());
    r.title = model + " on " + cluster;
    for (const char* k : {"cluster", "model", "job"}) {
      if (doc.contains(k) && doc[k].contains("file")) r.config_files.push_back(doc[k]["file"]);
    }
    r.columns = kPointColumns;
    PlotSeries s{model, {}};
    for (const json& p : doc["points"]) {
      r.rows.push_back(point_cells(p));
      s.points.push_back(plot_point(p));
    }
    r.series.push_back(std::move(s));
    return r;
  } catch (const json::exception& e) {
    throw models::ConfigError(name, 0, 0, "", std::string("cannot read the results: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw models::ConfigError(name, 0, 0, "", "cannot read the results: a number is malformed");
  }
}

ResultSet read_results(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw models::ConfigError(path, 0, 0, "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_results(text.str(), path);
}

}  // namespace trainsim::cli
