#include "tools/result_reader.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/check.h"
#include "models/spec/config_error.h"
#include "tools/report_format.h"
#include "tools/result_schema.h"

namespace trainsim::cli {

namespace {

using nlohmann::json;

// The columns a result file has for every row (sweep rows lack the slowest rank).
std::vector<const ResultColumn*> row_columns() {
  std::vector<const ResultColumn*> out;
  for (const ResultColumn& c : result_columns()) {
    if (c.in_sweep_rows) out.push_back(&c);
  }
  return out;
}

PlotPoint plot_point(const json& p) {
  PlotPoint q;
  q.nodes = p.value("nodes", 0);
  q.throughput = result_column("throughput_examples_per_s").number_in(p);
  q.step_time = result_column("step_time_s").number_in(p);
  q.speedup = result_column("speedup").number_in(p);
  q.efficiency = result_column("efficiency").number_in(p);
  const auto parts = breakdown_parts();
  TRAINSIM_ASSERT(parts.size() == PlotPoint::kParts, "a plot bar for every breakdown part");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const double v = parts[i]->number_in(p);
    q.parts[i] = std::isnan(v) ? 0.0 : v;
  }
  return q;
}

std::vector<std::string> point_cells(const json& p) {
  std::vector<std::string> cells;
  for (const ResultColumn* c : row_columns()) cells.push_back(c->table_text(p));
  return cells;
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
  // The nodes column is the nodes axis.
  for (const ResultColumn* c : row_columns()) c->put_json_from_csv(row, f[c->csv_key()]);
  return row;
}

}  // namespace

// What report and compare say of a result they cannot plot.
constexpr const char* kPlacementResult =
    "a predict --placement result (jobs sharing a cluster), not a scaling table: this command "
    "reads predict and sweep results";

ResultSet parse_results(const std::string& given, const std::string& name) {
  ResultSet r;
  // A sweep CSV without its header (standard output, or its side file left behind): named by
  // its file, baseline 1 node.
  const std::string text =
      given.rfind("index,", 0) == 0
          ? "# trainsim sweep " +
                json{{"trainsim_sweep", std::filesystem::path(name).stem().string()}}.dump(
                    -1, ' ', false, json::error_handler_t::replace) +
                "\n" + given
          : given;
  const std::string first = text.substr(0, text.find('\n'));
  int at = 1;  // the line being read, for errors
  if (first.rfind("job,first_node,", 0) == 0) {
    throw models::ConfigError(name, 1, 1, "", kPlacementResult);
  }
  try {
    if (first.rfind("# trainsim sweep ", 0) == 0 ||
        first.find("\"trainsim_sweep\"") != std::string::npos) {
      r.kind = "sweep";
      std::istringstream lines(text);
      std::string line;
      std::getline(lines, line);
      std::vector<std::string> axes;
      std::vector<json> rows;
      std::vector<int> row_lines;
      const bool csv = !line.empty() && line[0] == '#';
      const auto brace = line.find('{');
      if (csv && brace == std::string::npos) {
        throw models::ConfigError(name, 1, 1, "", "the sweep header has no JSON object");
      }
      const json header = json::parse(csv ? line.substr(brace) : line);
      r.title = header.value("trainsim_sweep", std::string());
      r.version = header.value("version", std::string());
      r.baseline_nodes = header.value("baseline_nodes", 1);
      if (header.contains("file")) r.config_files.push_back(header.at("file").get<std::string>());
      if (header.contains("provenance")) {
        r.provenance = provenance_from_json(header.at("provenance"));
      }
      if (csv) {
        std::getline(lines, line);
        ++at;
        const auto columns = csv_fields(line);
        for (std::size_t i = 1; i < columns.size() && columns[i] != "gpus"; ++i)
          axes.push_back(columns[i]);
        while (std::getline(lines, line)) {
          ++at;
          if (line.empty()) continue;
          rows.push_back(csv_row(columns, csv_fields(line), axes));
          row_lines.push_back(at);
        }
      } else {
        for (const auto& a : header.at("axes")) axes.push_back(a.get<std::string>());
        while (std::getline(lines, line)) {
          ++at;
          if (line.empty()) continue;
          rows.push_back(json::parse(line));
          row_lines.push_back(at);
        }
      }
      r.columns = {"index"};
      for (const auto& a : axes) r.columns.push_back(a);
      for (const ResultColumn* c : row_columns()) r.columns.emplace_back(c->label);
      r.columns.push_back("error");
      std::map<std::string, std::size_t> series_of;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const json& row = rows[i];
        at = row_lines[i];
        std::vector<std::string> cells = {std::to_string(row.at("index").get<std::size_t>())};
        std::string label;
        for (const auto& a : axes) {
          const json& given = row.at("axes").contains(a) ? row.at("axes").at(a) : json();
          const std::string v = given.is_string()   ? given.get<std::string>()
                                : given.is_number() ? given.dump()
                                                    : std::string();
          cells.push_back(v);
          if (a != "nodes") label += (label.empty() ? "" : ", ") + a + "=" + v;
        }
        if (row.contains("error")) {
          cells.resize(r.columns.size() - 1, "");
          cells.push_back(row.at("error").get<std::string>());
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
    at = 0;  // a predict result is one JSON document
    const json doc = json::parse(text);
    if (doc.is_object() && doc.contains("placement") && doc.contains("jobs")) {
      throw models::ConfigError(name, 1, 1, "", kPlacementResult);
    }
    if (!doc.contains("points")) {
      throw models::ConfigError(name, 1, 1, "",
                                "not a trainsim predict JSON result or sweep output");
    }
    r.kind = "predict";
    r.version = doc.value("trainsim_version", std::string());
    r.baseline_nodes = doc.value("baseline_nodes", 1);
    // Reading a missing key of a const JSON object is undefined (nlohmann): at() throws instead.
    const std::string model = doc.at("model").value("name", std::string());
    const std::string cluster = doc.at("cluster").value("name", std::string());
    r.title = model + " on " + cluster;
    for (const char* k : {"cluster", "model", "job"}) {
      if (doc.contains(k) && doc.at(k).contains("file"))
        r.config_files.push_back(doc.at(k).at("file").get<std::string>());
    }
    if (doc.contains("provenance")) r.provenance = provenance_from_json(doc.at("provenance"));
    for (const ResultColumn* c : row_columns()) r.columns.emplace_back(c->label);
    PlotSeries s{model, {}};
    for (const json& p : doc.at("points")) {
      r.rows.push_back(point_cells(p));
      s.points.push_back(plot_point(p));
    }
    r.series.push_back(std::move(s));
    return r;
  } catch (const models::ConfigError&) {
    throw;
  } catch (const json::exception& e) {
    throw models::ConfigError(name, at, at > 0 ? 1 : 0, "",
                              std::string("cannot read the results: ") + e.what());
  } catch (const std::exception&) {
    // A malformed number or field (stoull, substr and the like).
    throw models::ConfigError(name, at, at > 0 ? 1 : 0, "",
                              "cannot read the results: a field is malformed");
  }
}

ResultSet read_results(const std::string& path) {
  std::string text = models::read_input_file(path);
  // A sweep's CSV keeps its header in FILE.meta.json: put it in front, as the CSV files of
  // earlier releases had it.
  if (text.rfind("index,", 0) == 0) {
    std::ifstream meta(path + ".meta.json", std::ios::binary);
    std::string header;
    if (meta && std::getline(meta, header) && header.rfind("{", 0) == 0) {
      text = "# trainsim sweep " + header + "\n" + text;
    }
  }
  return parse_results(text, path);
}

}  // namespace trainsim::cli
