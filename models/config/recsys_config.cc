#include "models/config/recsys_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/config/cluster_config.h"
#include "models/config/config_node.h"
#include "models/config/model_config.h"
#include "models/config/runtime_config.h"

namespace trainsim::models {

namespace {

std::vector<int> positive_list(const ConfigNode& node) {
  std::vector<int> out;
  for (const ConfigNode& item : node.items())
    out.push_back(static_cast<int>(item.positive_integer()));
  return out;
}

OptimizerSpec parse_optimizer(const ConfigNode& node) {
  OptimizerSpec o;
  std::optional<ConfigNode> state;
  if (node.is_scalar()) {
    o.kind = node.as_enum(optimizer_names());
  } else {
    MapReader map(node);
    o.kind = map.required("type").as_enum(optimizer_names());
    state = map.optional("state_bytes_per_parameter");
    map.finish();
  }
  switch (o.kind) {
    case OptimizerKind::kSgd:
      o.state_bytes_per_parameter = 0;
      break;
    case OptimizerKind::kAdagrad:
      o.state_bytes_per_parameter = 4;  // one fp32 accumulator per parameter
      break;
    case OptimizerKind::kAdam:
      o.state_bytes_per_parameter = 8;  // fp32 first and second moments
      break;
  }
  if (state) o.state_bytes_per_parameter = state->nonnegative_quantity(Dimension::kBytes);
  return o;
}

std::vector<double> read_histogram(const ConfigNode& at, const std::string& path, double& other) {
  std::ifstream in(path);
  if (!in) at.fail("cannot open histogram file '" + path + "'");
  std::vector<double> counts;
  other = 0.0;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] == '#') continue;
    double value = 0.0;
    std::string rest;
    if (first == "other") {
      if (!(words >> value) || value < 0 || (words >> rest)) {
        throw ConfigError(path, number, 1, "", "expected 'other COUNT'");
      }
      other = value;
      continue;
    }
    std::istringstream number_text(first);
    if (!(number_text >> value) || value < 0 || (words >> rest)) {
      throw ConfigError(path, number, 1, "", "expected an access count, got '" + line + "'");
    }
    counts.push_back(value);
  }
  if (counts.empty()) throw ConfigError(path, 0, 0, "", "no access counts in the histogram");
  return counts;
}

}  // namespace

AccessDistribution parse_access(const ConfigNode& node, double rows) {
  MapReader map(node);
  const ConfigNode distribution = map.required("distribution");
  const std::string kind = distribution.as_string();
  AccessDistribution out = AccessDistribution::uniform(rows);
  const auto alpha = map.optional("alpha");
  const auto file = map.optional("file");
  if (kind == "uniform") {
    if (alpha) alpha->fail("applies only to distribution: zipf");
  } else if (kind == "zipf") {
    if (!alpha) map.fail_missing("alpha", "a Zipf distribution needs its exponent");
    const double a = alpha->as_number();
    if (a < 0) alpha->fail("must not be negative, got " + alpha->as_string());
    out = AccessDistribution::zipf(rows, a);
  } else if (kind == "histogram") {
    if (!file) map.fail_missing("file", "a histogram distribution needs its file");
    const std::filesystem::path base = std::filesystem::path(node.file()).parent_path();
    const std::filesystem::path p = base / file->as_string();
    double other = 0.0;
    std::vector<double> counts = read_histogram(*file, p.string(), other);
    if (static_cast<double>(counts.size()) > rows) file->fail("lists more rows than the table has");
    out = AccessDistribution::histogram(rows, std::move(counts), other);
  } else {
    distribution.fail("must be uniform, zipf or histogram, got '" + kind + "'");
  }
  if (file && kind != "histogram") file->fail("applies only to distribution: histogram");
  map.finish();
  return out;
}

RecsysModelSpec parse_recsys_model_spec(const ConfigNode& root) {
  MapReader map(root);
  RecsysModelSpec m;
  m.source_file = root.file();
  m.name = map.required("name").as_string();
  map.required("kind");
  if (auto d = map.optional("description")) m.description = d->as_string();
  m.dense_features = static_cast<int>(map.required("dense_features").as_integer());
  if (m.dense_features < 0) root.fail("dense_features must not be negative");

  const ConfigNode embedding = map.required("embedding");
  MapReader emb(embedding);
  const auto default_dim = emb.optional("dim");
  const auto default_dtype = emb.optional("dtype");
  const auto default_access = emb.optional("access");
  const ConfigNode tables = emb.required("tables");
  for (const ConfigNode& item : tables.items()) {
    MapReader t(item);
    EmbeddingTableSpec table;
    table.location = item.location();
    table.name = t.required("name").as_string();
    const ConfigNode rows = t.required("rows");
    table.rows = static_cast<double>(rows.positive_integer());
    const auto dim = t.optional("dim");
    if (!dim && !default_dim) t.fail_missing("dim", "no embedding.dim default either");
    table.dim = static_cast<int>((dim ? *dim : *default_dim).positive_integer());
    const auto dtype = t.optional("dtype");
    table.dtype = dtype           ? parse_dtype_node(*dtype)
                  : default_dtype ? parse_dtype_node(*default_dtype)
                                  : Dtype::kFp32;
    const auto pooling = t.optional("pooling");
    if (!pooling) t.fail_missing("pooling", "ids per sample");
    table.pooling = pooling->as_number();
    if (!(table.pooling > 0)) pooling->fail("must be positive, got " + pooling->as_string());
    if (auto seq = t.optional("sequence")) table.sequence = seq->as_bool();
    const auto access = t.optional("access");
    if (access) {
      table.access = parse_access(*access, table.rows);
    } else if (default_access) {
      table.access = parse_access(*default_access, table.rows);
    } else {
      table.access = AccessDistribution::uniform(table.rows);
    }
    t.finish();
    for (const auto& other : m.tables) {
      if (other.name == table.name) item.fail("duplicate table name '" + table.name + "'");
    }
    m.tables.push_back(std::move(table));
  }
  if (m.tables.empty()) tables.fail("needs at least one table");
  emb.finish();

  if (auto bottom = map.optional("bottom_mlp")) m.bottom_mlp = positive_list(*bottom);
  if (auto interaction = map.optional("interaction")) {
    MapReader i(*interaction);
    m.interaction = i.required("type").as_enum(interaction_names());
    const auto layers = i.optional("layers");
    const auto rank = i.optional("low_rank");
    const bool dcn = m.interaction == InteractionKind::kDcnV2;
    if (dcn) {
      if (!layers) i.fail_missing("layers", "DCNv2 cross layers");
      if (!rank) i.fail_missing("low_rank", "DCNv2 low rank");
      m.cross_layers = static_cast<int>(layers->positive_integer());
      m.low_rank = static_cast<int>(rank->positive_integer());
    }
    if (!dcn && (layers || rank))
      (layers ? *layers : *rank).fail("applies only to type: dcnv2");
    i.finish();
  }
  if (auto top = map.optional("top_mlp")) m.top_mlp = positive_list(*top);
  if (auto transformer = map.optional("transformer")) {
    MapReader t(*transformer);
    TransformerSpec spec;
    spec.layers = static_cast<int>(t.required("layers").positive_integer());
    spec.d_model = static_cast<int>(t.required("d_model").positive_integer());
    spec.heads = static_cast<int>(t.required("heads").positive_integer());
    spec.ffn = static_cast<int>(t.required("ffn").positive_integer());
    const ConfigNode table = t.required("sequence_table");
    const std::string name = table.as_string();
    const EmbeddingTableSpec* found = nullptr;
    for (auto& e : m.tables) {
      if (e.name == name) {
        e.sequence = true;
        found = &e;
      }
    }
    if (!found) table.fail("no table named '" + name + "'");
    if (found->dim != spec.d_model)
      table.fail("table '" + name + "' has dim " + std::to_string(found->dim) +
                 ", the transformer d_model " + std::to_string(spec.d_model));
    spec.sequence_length = static_cast<int>(found->pooling);
    t.finish();
    m.transformer = spec;
  }
  if (auto optimizer = map.optional("optimizer")) {
    MapReader o(*optimizer);
    if (auto e = o.optional("embedding")) m.embedding_optimizer = parse_optimizer(*e);
    if (auto d = o.optional("dense")) m.dense_optimizer = parse_optimizer(*d);
    o.finish();
  }
  if (auto precision = map.optional("precision")) {
    MapReader p(*precision);
    if (auto c = p.optional("compute")) {
      m.compute_dtype = parse_dtype_node(*c);
      m.compute_dtype_location = c->location();
    }
    if (auto c = p.optional("communication")) m.communication_dtype = parse_dtype_node(*c);
    if (auto c = p.optional("gradient")) m.gradient_dtype = parse_dtype_node(*c);
    p.finish();
  }
  if (m.compute_dtype_location.file.empty()) m.compute_dtype_location = root.location();
  if (auto d = map.optional("dataset")) m.dataset = parse_dataset(*d);
  if (auto c = map.optional("convergence")) m.convergence = parse_convergence(*c);
  map.finish();
  return m;
}

ModelSpec load_model_spec(const std::string& path, const std::vector<YamlSetting>& settings) {
  const ConfigNode root = ConfigNode::load_file(path, settings);
  MapReader probe(root);
  if (probe.has("kind")) {
    const ConfigNode kind = probe.required("kind");
    const std::string k = kind.as_string();
    if (k == "recsys") return parse_recsys_model_spec(root);
    if (k != "dense") kind.fail("must be dense or recsys, got '" + k + "'");
  }
  return parse_dense_model_spec(root);
}

}  // namespace trainsim::models
