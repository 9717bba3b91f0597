#include "models/config/recsys_config.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "models/config/cluster_config.h"
#include "models/config/config_node.h"
#include "models/config/model_config.h"
#include "models/config/param_table.h"
#include "models/config/runtime_params.h"

namespace trainsim::models {

namespace {

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
  std::string text;
  try {
    text = read_input_file(path);
  } catch (const ConfigError& e) {
    at.fail("histogram file '" + path + "': " + e.message());
  }
  std::vector<double> counts;
  other = 0.0;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  // A count (or a relative frequency): a plain number, not negative ("1abc", "0x10" and "nan"
  // are not).
  auto count_of = [](const std::string& word) -> std::optional<double> {
    const auto v = parse_number(word);
    if (!v || *v < 0) return std::nullopt;
    return v;
  };
  while (std::getline(in, line)) {
    ++number;
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] == '#') continue;
    std::string word, rest;
    if (first == "other") {
      const auto value = (words >> word) ? count_of(word) : std::nullopt;
      if (!value || (words >> rest)) {
        throw ConfigError(path, number, 1, "", "expected 'other COUNT' (a number), got '" +
                                                   line + "'");
      }
      other = *value;
      continue;
    }
    const auto value = count_of(first);
    if (!value || (words >> rest)) {
      throw ConfigError(path, number, 1, "",
                        "expected an access count (a number), got '" + line + "'");
    }
    counts.push_back(*value);
  }
  if (counts.empty()) throw ConfigError(path, 0, 0, "", "no access counts in the histogram");
  double total = other;
  for (const double c : counts) total += c;
  if (!(total > 0)) {
    throw ConfigError(path, 0, 0, "", "the histogram's counts are all zero: no row is looked up");
  }
  if (!std::isfinite(total)) throw ConfigError(path, 0, 0, "", "the histogram's counts overflow");
  return counts;
}

}  // namespace

AccessDistribution parse_access(const ConfigNode& node, double rows, std::string* file_out,
                                double ids_per_sample) {
  MapReader map(node);
  const ConfigNode distribution = map.required("distribution");
  const std::string kind = distribution.as_string();
  AccessDistribution out = AccessDistribution::uniform(rows);
  const auto alpha = map.optional("alpha");
  const auto file = map.optional("file");
  const auto hot_rows = map.optional("hot_rows");
  const auto hot_mass = map.optional("hot_mass");
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
    if (file_out) *file_out = std::filesystem::absolute(p).lexically_normal().string();
    double other = 0.0;
    std::vector<double> counts = read_histogram(*file, p.string(), other);
    if (static_cast<double>(counts.size()) > rows) file->fail("lists more rows than the table has");
    out = AccessDistribution::histogram(rows, std::move(counts), other);
  } else if (kind == "hot_set") {
    if (!hot_rows) map.fail_missing("hot_rows", "a hot set needs its size");
    if (!hot_mass) map.fail_missing("hot_mass", "a hot set needs its share of the lookups");
    const double h = static_cast<double>(hot_rows->positive_integer());
    if (h > rows) hot_rows->fail("exceeds the table's rows");
    out = AccessDistribution::hot_set(rows, h, hot_mass->fraction());
  } else {
    distribution.fail("must be uniform, zipf, histogram or hot_set, got '" + kind + "'");
  }
  if (file && kind != "histogram") file->fail("applies only to distribution: histogram");
  for (const auto* key : {&hot_rows, &hot_mass}) {
    if (*key && kind != "hot_set") (*key)->fail("applies only to distribution: hot_set");
  }
  if (auto multi = map.optional("multi_hot")) {
    const std::string how = multi->as_string();
    if (how != "independent" && how != "derived") {
      multi->fail("must be independent or derived, got '" + how + "'");
    }
    if (how == "derived") out = out.derived_multi_hot(ids_per_sample);
  }
  map.finish();
  return out;
}

namespace {

using P = Params<RecsysModelSpec>;
using RecsysParam = Param<RecsysModelSpec>;

RecsysParam required(RecsysParam p, std::string why = "") {
  p.required = true;
  p.why = std::move(why);
  return p;
}

// A table in TorchRec's shape (torchrec.modules.embedding_configs.EmbeddingBagConfig: name,
// num_embeddings, embedding_dim, feature_names, pooling, data_type), with the ids per sample of
// each feature as its planner's ParameterConstraints.pooling_factors give them (default 1).
EmbeddingTableSpec torchrec_table(const ConfigNode& item, const std::optional<ConfigNode>& access) {
  MapReader t(item);
  EmbeddingTableSpec table;
  table.location = item.location();
  table.name = t.required("name").as_string();
  table.rows = static_cast<double>(t.required("num_embeddings").positive_integer());
  table.dim = static_cast<int>(t.required("embedding_dim").positive_integer());
  double features = 1;
  if (auto names = t.optional("feature_names")) {
    features = static_cast<double>(names->items().size());
    if (features < 1) names->fail("lists no feature");
  }
  table.pooling = features;
  const auto factor = t.optional("pooling_factor");
  const auto factors = t.optional("pooling_factors");
  if (factor && factors) factors->fail("give pooling_factor or pooling_factors, not both");
  if (factor) {
    table.pooling = factor->as_number() * features;
    if (!(table.pooling > 0)) factor->fail("must be positive, got " + factor->as_string());
  } else if (factors) {
    table.pooling = 0;
    for (const ConfigNode& f : factors->items()) {
      const double v = f.as_number();
      if (!(v > 0)) f.fail("must be positive, got " + f.as_string());
      table.pooling += v;
    }
    if (!(table.pooling > 0)) factors->fail("lists no pooling factor");
  }
  if (auto pooling = t.optional("pooling")) {
    const std::string mode = pooling->as_string();
    if (mode == "NONE") {
      table.sequence = true;
    } else if (mode != "SUM" && mode != "MEAN") {
      pooling->fail("must be SUM, MEAN or NONE (TorchRec's PoolingType), got '" + mode + "'");
    }
  }
  table.dtype = Dtype::kFp32;
  if (auto type = t.optional("data_type")) {
    std::string name = type->as_string();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto dtype = parse_dtype(name);
    if (!dtype) {
      type->fail("must be FP32, FP16, BF16 or FP8 (TorchRec's DataType), got '" +
                 type->as_string() + "'");
    }
    table.dtype = *dtype;
  }
  // EmbeddingBagConfig's fields that change nothing here: initialisation and pruning.
  for (const char* key : {"weight_init_max", "weight_init_min", "init_fn", "need_pos",
                          "num_embeddings_post_pruning"}) {
    (void)t.optional(key);
  }
  const auto own = t.optional("access");
  const auto chosen = own ? own : access;
  table.access = chosen ? parse_access(*chosen, table.rows, &table.access_file, table.pooling)
                        : AccessDistribution::uniform(table.rows);
  t.finish();
  return table;
}

// embedding.tables, each with the defaults of embedding.dim, .dtype and .access; or the name of
// a file listing them in TorchRec's shape (a list, or a map whose `tables` is one).
void read_tables(const ConfigNode& embedding, RecsysModelSpec& m) {
  MapReader emb(embedding);
  const auto default_dim = emb.optional("dim");
  const auto default_dtype = emb.optional("dtype");
  const auto default_access = emb.optional("access");
  const ConfigNode tables = emb.required("tables");
  if (tables.is_scalar()) {
    const std::filesystem::path base = std::filesystem::path(tables.file()).parent_path();
    const std::string path = (base / tables.as_string()).lexically_normal().string();
    ConfigNode doc = [&] {
      try {
        return ConfigNode::load_file(path);
      } catch (const ConfigError& e) {
        tables.fail(std::string(e.what()));
      }
    }();
    if (doc.is_map()) {
      MapReader top(doc);
      doc = top.required("tables");  // the other keys (a plan beside them) are not the model's
    }
    for (const ConfigNode& item : doc.items()) {
      EmbeddingTableSpec table = torchrec_table(item, default_access);
      for (const auto& other : m.tables) {
        if (other.name == table.name) item.fail("duplicate table name '" + table.name + "'");
      }
      m.tables.push_back(std::move(table));
    }
    if (m.tables.empty()) doc.fail("needs at least one table");
    return;
  }
  for (const ConfigNode& item : tables.items()) {
    MapReader t(item);
    EmbeddingTableSpec table;
    table.location = item.location();
    table.name = t.required("name").as_string();
    table.rows = static_cast<double>(t.required("rows").positive_integer());
    const auto dim = t.optional("dim");
    if (!dim && !default_dim) t.fail_missing("dim", "no embedding.dim default either");
    table.dim = static_cast<int>((dim ? *dim : *default_dim).positive_integer());
    const auto dtype = t.optional("dtype");
    table.dtype = dtype           ? dtype->as_enum(dtype_names())
                  : default_dtype ? default_dtype->as_enum(dtype_names())
                                  : Dtype::kFp32;
    const auto pooling = t.optional("pooling");
    if (!pooling) t.fail_missing("pooling", "ids per sample");
    table.pooling = pooling->as_number();
    if (!(table.pooling > 0)) pooling->fail("must be positive, got " + pooling->as_string());
    if (auto seq = t.optional("sequence")) table.sequence = seq->as_bool();
    const auto access = t.optional("access") ? t.optional("access") : default_access;
    table.access = access ? parse_access(*access, table.rows, &table.access_file, table.pooling)
                          : AccessDistribution::uniform(table.rows);
    t.finish();
    for (const auto& other : m.tables) {
      if (other.name == table.name) item.fail("duplicate table name '" + table.name + "'");
    }
    m.tables.push_back(std::move(table));
  }
  if (m.tables.empty()) tables.fail("needs at least one table");
}

YAML::Node access_yaml(const EmbeddingTableSpec& t) {
  YAML::Node access(YAML::NodeType::Map);
  access.SetStyle(YAML::EmitterStyle::Flow);
  access["distribution"] = yaml_text(std::string(t.access.kind_name()));
  if (t.access.kind_name() == "zipf") access["alpha"] = yaml_text(format_plain(t.access.alpha()));
  if (t.access.kind_name() == "histogram") access["file"] = yaml_text(t.access_file);
  if (t.access.kind_name() == "hot_set") {
    access["hot_rows"] = yaml_text(format_whole(t.access.hot_rows()));
    access["hot_mass"] = yaml_text(format_plain(t.access.hot_mass()));
  }
  if (t.access.ids_per_sample() > 1) access["multi_hot"] = yaml_text("derived");
  return access;
}

std::vector<RecsysParam> embedding_params() {
  RecsysParam section = required(P::section({.key = "embedding", .help = "the embedding tables"}));
  section.read = read_tables;
  RecsysParam tables = P::custom(
      {.key = "embedding.tables", .type = "list of tables", .default_text = "required",
       .help = "at least one; names unique"},
      nullptr, [](const RecsysModelSpec& m) -> std::optional<YAML::Node> {
        YAML::Node list(YAML::NodeType::Sequence);
        for (const EmbeddingTableSpec& t : m.tables) {
          YAML::Node table(YAML::NodeType::Map);
          table.SetStyle(YAML::EmitterStyle::Flow);
          table["name"] = yaml_text(t.name);
          table["rows"] = yaml_text(format_whole(t.rows));
          table["dim"] = yaml_text(std::to_string(t.dim));
          table["dtype"] = yaml_text(std::string(dtype_name(t.dtype)));
          table["pooling"] = yaml_text(format_plain(t.pooling));
          if (t.sequence) table["sequence"] = yaml_flag(true);
          table["access"] = access_yaml(t);
          list.push_back(table);
        }
        return list;
      });
  const std::string dtypes = dtype_names().choices();
  const std::string access_help =
      "{distribution: uniform}, {distribution: zipf, alpha: A} (A >= 0; row k has probability "
      "proportional to k^-A), or {distribution: histogram, file: F}: one access count per line "
      "for rows 1, 2, ... (hottest first), optionally a line 'other C' for the remaining rows "
      "together; # starts a comment; F is relative to the model file; or {distribution: hot_set, "
      "hot_rows: H, hot_mass: M}: the H hottest rows share M of the lookups evenly, the rest "
      "the others. With multi_hot: derived, "
      "a sample's first id follows the distribution and its other pooling - 1 ids are fixed "
      "functions of it, uniformly placed (MLPerf DLRM-DCNv2's generator; default independent: "
      "every id drawn from the distribution)";
  return {
      section,
      P::item({.key = "embedding.dim", .type = "whole number", .range = "> 0",
               .default_text = "none", .help = "default dim of every table"}),
      P::item({.key = "embedding.dtype", .type = "name", .range = dtypes, .default_text = "fp32",
               .help = "default storage format of every table"}),
      P::item({.key = "embedding.access", .type = "map", .default_text = "{distribution: uniform}",
               .help = "default access distribution of every table: " + access_help}),
      tables,
      P::item({.key = "embedding.tables[].name", .type = "text", .default_text = "required",
               .help = "the table's name"}),
      P::item({.key = "embedding.tables[].rows", .type = "whole number", .range = "> 0",
               .default_text = "required", .help = "rows of the table"}),
      P::item({.key = "embedding.tables[].dim", .type = "whole number", .range = "> 0",
               .default_text = "embedding.dim", .help = "width of a row"}),
      P::item({.key = "embedding.tables[].dtype", .type = "name", .range = dtypes,
               .default_text = "embedding.dtype", .help = "storage format of a row"}),
      P::item({.key = "embedding.tables[].pooling", .type = "number", .range = "> 0",
               .default_text = "required",
               .help = "ids per sample: pooling factor or multi-hot size"}),
      P::item({.key = "embedding.tables[].sequence", .type = "flag", .default_text = "false",
               .help = "the ids form a sequence (one row per id, not pooled); set for the "
                       "transformer's sequence_table"}),
      P::item({.key = "embedding.tables[].access", .type = "map",
               .default_text = "embedding.access", .help = access_help}),
  };
}

RecsysParam layer_list(std::string key, std::string help,
                       std::vector<int>& (*field)(RecsysModelSpec&)) {
  return P::custom(
      {.key = std::move(key), .type = "list of whole numbers", .range = "> 0",
       .default_text = "none", .help = std::move(help)},
      [field](const ConfigNode& n, RecsysModelSpec& m) {
        std::vector<int>& widths = field(m);
        widths.clear();
        for (const ConfigNode& item : n.items()) {
          widths.push_back(static_cast<int>(item.positive_integer()));
        }
      },
      [field](const RecsysModelSpec& m) -> std::optional<YAML::Node> {
        const std::vector<int>& widths = field(const_cast<RecsysModelSpec&>(m));
        if (widths.empty()) return std::nullopt;
        return yaml_flow_list(widths);
      });
}

std::vector<RecsysParam> interaction_params() {
  const auto dcn = [](const RecsysModelSpec& m) { return m.interaction == InteractionKind::kDcnV2; };
  RecsysParam layers = required(P::whole({.key = "interaction.layers", .help = "DCNv2 cross layers"},
                                         [](auto& s) -> auto& { return s.cross_layers; }),
                                "DCNv2 cross layers");
  RecsysParam rank = required(
      P::whole({.key = "interaction.low_rank",
                .help = "DCNv2 low rank: each cross layer is a down and an up projection"},
               [](auto& s) -> auto& { return s.low_rank; }),
      "DCNv2 low rank");
  for (RecsysParam* p : {&layers, &rank}) {
    p->applies = dcn;
    p->doc.applies = "type: dcnv2";
  }
  return {
      P::section({.key = "interaction", .help = "how the feature vectors meet"}),
      required(P::choice({.key = "interaction.type",
                          .help = "dot: pairwise dot products of the feature vectors; dcnv2: "
                                  "cross layers; concat: concatenation"},
                         interaction_names(), [](auto& s) -> auto& { return s.interaction; })),
      layers,
      rank,
  };
}

std::vector<RecsysParam> transformer_params() {
  RecsysParam section = P::section(
      {.key = "transformer", .help = "blocks over the ids of sequence_table (a foundation-style "
                                     "model over user history)"});
  section.read = [](const ConfigNode&, RecsysModelSpec& m) { m.transformer = TransformerSpec{}; };
  section.written = [](const RecsysModelSpec& m) { return m.transformer.has_value(); };
  RecsysParam table = required(P::custom(
      {.key = "transformer.sequence_table", .type = "text",
       .help = "the table whose ids form the sequence: its pooling is the sequence length, its dim "
               "must equal d_model"},
      [](const ConfigNode& n, RecsysModelSpec& m) {
        const std::string name = n.as_string();
        EmbeddingTableSpec* found = nullptr;
        for (auto& e : m.tables) {
          if (e.name == name) found = &e;
        }
        if (!found) n.fail("no table named '" + name + "'");
        found->sequence = true;
        if (found->dim != m.transformer->d_model) {
          n.fail("table '" + name + "' has dim " + std::to_string(found->dim) +
                 ", the transformer d_model " + std::to_string(m.transformer->d_model));
        }
        m.transformer->sequence_length = static_cast<int>(found->pooling);
        m.transformer->sequence_table = name;
      },
      [](const RecsysModelSpec& m) -> std::optional<YAML::Node> {
        return yaml_text(m.transformer->sequence_table);
      }));
  std::vector<RecsysParam> out = {section};
  for (auto [key, help, field] :
       {std::tuple{"transformer.layers", "transformer blocks", &TransformerSpec::layers},
        std::tuple{"transformer.d_model", "model width", &TransformerSpec::d_model},
        std::tuple{"transformer.heads", "attention heads", &TransformerSpec::heads},
        std::tuple{"transformer.ffn", "feed-forward width", &TransformerSpec::ffn}}) {
    // An init-capture: clang before 16 cannot capture a structured binding.
    RecsysParam p =
        required(P::whole({.key = key, .default_text = "required", .help = help},
                          [member = field](auto& s) -> auto& { return (*s.transformer).*member; }));
    out.push_back(std::move(p));
  }
  out.push_back(table);
  return out;
}

RecsysParam optimizer_param(std::string key, std::string what, OptimizerSpec& (*field)(RecsysModelSpec&)) {
  return P::custom(
      {.key = std::move(key), .type = "name or {type, state_bytes_per_parameter}",
       .range = optimizer_names().choices(), .default_text = "sgd",
       .help = "optimizer of the " + what + " parameters: sgd, adagrad or adam (0, 4 or 8 bytes "
               "of state per parameter), or {type: ..., state_bytes_per_parameter: B} (e.g. "
               "row-wise Adagrad: 4 / dim)"},
      [field](const ConfigNode& n, RecsysModelSpec& m) { field(m) = parse_optimizer(n); },
      [field](const RecsysModelSpec& m) -> std::optional<YAML::Node> {
        const OptimizerSpec& o = field(const_cast<RecsysModelSpec&>(m));
        YAML::Node node(YAML::NodeType::Map);
        node.SetStyle(YAML::EmitterStyle::Flow);
        node["type"] = yaml_text(std::string(optimizer_names().name(o.kind)));
        node["state_bytes_per_parameter"] = yaml_text(format_plain(o.state_bytes_per_parameter));
        return node;
      });
}

std::vector<RecsysParam> precision_params() {
  RecsysParam compute = P::choice(
      {.key = "precision.compute",
       .help = "format of the dense GEMMs; the cluster's GPU must list a peak for it"},
      dtype_names(), [](auto& s) -> auto& { return s.compute_dtype; });
  compute = P::checked(compute, [](const ConfigNode& n, RecsysModelSpec& m) {
    m.compute_dtype_location = n.location();
  });
  return {
      P::section({.key = "precision", .help = "number formats"}),
      compute,
      P::choice({.key = "precision.communication",
                 .help = "embedding all-to-all payload (below fp32: quantized all-to-all)"},
                dtype_names(), [](auto& s) -> auto& { return s.communication_dtype; }),
      P::choice({.key = "precision.gradient", .help = "dense gradient all-reduce payload"},
                dtype_names(), [](auto& s) -> auto& { return s.gradient_dtype; }),
  };
}

ParamTable<RecsysModelSpec> make_recsys_params() {
  std::vector<RecsysParam> params = name_params<RecsysModelSpec>("model");
  const auto add = [&params](std::vector<RecsysParam> more) {
    for (RecsysParam& p : more) params.push_back(std::move(p));
  };
  params.push_back(required(P::custom(
      {.key = "kind", .type = "name", .range = "recsys", .help = "recsys for this table"}, nullptr,
      [](const RecsysModelSpec&) -> std::optional<YAML::Node> { return yaml_text("recsys"); })));
  params.push_back(required(P::whole({.key = "dense_features",
                                      .help = "dense (non-embedding) inputs per example"},
                                     [](auto& s) -> auto& { return s.dense_features; }, 0)));
  add(embedding_params());
  params.push_back(layer_list("bottom_mlp", "widths of the layers on the dense features, e.g. [512, 256, 128]",
                              [](RecsysModelSpec& m) -> std::vector<int>& { return m.bottom_mlp; }));
  add(interaction_params());
  params.push_back(layer_list("top_mlp", "widths of the layers after the interaction",
                              [](RecsysModelSpec& m) -> std::vector<int>& { return m.top_mlp; }));
  add(transformer_params());
  params.push_back(P::section({.key = "optimizer", .help = "optimizers and their state"}));
  params.push_back(optimizer_param("optimizer.embedding", "embedding",
                                   [](RecsysModelSpec& m) -> OptimizerSpec& { return m.embedding_optimizer; }));
  params.push_back(optimizer_param("optimizer.dense", "dense",
                                   [](RecsysModelSpec& m) -> OptimizerSpec& { return m.dense_optimizer; }));
  add(precision_params());
  add(dataset_params<RecsysModelSpec>([](auto& s) -> auto& { return s.dataset; }));
  add(convergence_params<RecsysModelSpec>([](auto& s) -> auto& { return s.convergence; }));
  return ParamTable<RecsysModelSpec>("Recommender model (configs/models/*.yaml with kind: recsys)",
                                     std::move(params), RecsysModelSpec{});
}

const ParamTable<RecsysModelSpec>& recsys_params() {
  static const ParamTable<RecsysModelSpec> table = make_recsys_params();
  return table;
}

}  // namespace

ParamTableDoc recsys_model_param_doc() { return recsys_params().doc(); }

RecsysModelSpec parse_recsys_model_spec(const ConfigNode& root) {
  RecsysModelSpec m;
  m.compute_dtype_location = root.location();  // the file's, unless precision.compute is given
  return recsys_params().load(root, m);
}

void write_model_yaml(std::ostream& stream, const ModelSpec& model) {
  if (const auto* dense = std::get_if<DenseModelSpec>(&model)) {
    write_dense_model_yaml(stream, *dense);
    return;
  }
  YAML::Emitter out;
  recsys_params().write(out, std::get<RecsysModelSpec>(model));
  stream << out.c_str() << "\n";
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
