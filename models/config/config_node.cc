#include "models/config/config_node.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

namespace trainsim::models {

namespace {

std::string join_path(const std::string& parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return parent + "." + std::string(key);
}

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

ConfigNode::ConfigNode(std::shared_ptr<const std::string> file, YAML::Node node, std::string path)
    : file_(std::move(file)), node_(std::move(node)), path_(std::move(path)) {}

ConfigNode ConfigNode::load_string(const std::string& text, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull()) {
      throw ConfigError(name, 1, 1, "", "the file is empty");
    }
    return ConfigNode(file, root, "");
  } catch (const YAML::Exception& e) {
    throw ConfigError(name, e.mark.line + 1, e.mark.column + 1, "", "invalid YAML: " + e.msg);
  }
}

ConfigNode ConfigNode::load_file(const std::string& path) {
  return load_string(read_input_file(path), path);
}

ConfigNode ConfigNode::load_file(const std::string& path,
                                 const std::vector<YamlSetting>& settings) {
  ConfigNode root = load_file(path);
  for (const YamlSetting& s : settings) {
    YAML::Node value;
    try {
      value = YAML::Load(s.value);
    } catch (const YAML::Exception& e) {
      throw ConfigError(path, 0, 0, "", "invalid YAML value '" + s.value + "': " + e.msg);
    }
    YAML::Node at;
    at.reset(root.node_);
    std::string walked;
    for (std::size_t i = 0; i < s.keys.size(); ++i) {
      if (!at.IsMap()) throw ConfigError(path, 0, 0, walked, "is not a map of keys");
      walked = join_path(walked, s.keys[i]);
      if (i + 1 == s.keys.size()) {
        at[s.keys[i]] = value;
      } else {
        if (!at[s.keys[i]]) at[s.keys[i]] = YAML::Node(YAML::NodeType::Map);
        YAML::Node next = at[s.keys[i]];
        at.reset(next);
      }
    }
  }
  return root;
}

int ConfigNode::line() const { return node_.Mark().line + 1; }
int ConfigNode::column() const { return node_.Mark().column + 1; }

void ConfigNode::fail(const std::string& message) const {
  throw ConfigError(*file_, line(), column(), path_, message);
}

std::string ConfigNode::as_yaml() const {
  YAML::Emitter out;
  out << YAML::Flow << node_;
  return out.c_str();
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a single value");
  return node_.Scalar();
}

double ConfigNode::as_number() const {
  const std::string text = as_string();
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) {
    fail("expected a number, got '" + text + "'");
  }
  return value;
}

std::int64_t ConfigNode::as_integer() const {
  const double value = as_number();
  if (std::floor(value) != value || std::abs(value) > 9e15) {
    fail("expected a whole number, got '" + as_string() + "'");
  }
  return static_cast<std::int64_t>(value);
}

bool ConfigNode::as_bool() const {
  const std::string text = as_string();
  if (text == "true") return true;
  if (text == "false") return false;
  fail("expected true or false, got '" + text + "'");
}

double ConfigNode::as_quantity(Dimension dimension) const {
  const std::string text = as_string();
  const auto value = parse_quantity(text, dimension);
  if (!value) {
    fail("expected " + std::string(dimension_name(dimension)) + " such as a number with a unit (" +
         std::string(dimension_units(dimension)) + "), got '" + text + "'");
  }
  const QuantityRange range = quantity_range(dimension);
  const double magnitude = std::fabs(*value);
  if (magnitude != 0 && magnitude < range.smallest) {
    fail("is too small: at least " + std::string(range.smallest_text) + " (a unit forgotten?), got '" +
         text + "'");
  }
  if (magnitude > range.largest) {
    fail("is too large: at most " + std::string(range.largest_text) + ", got '" + text + "'");
  }
  return *value;
}

double ConfigNode::positive_quantity(Dimension dimension) const {
  const double value = as_quantity(dimension);
  if (!(value > 0.0)) {
    fail("must be positive, got '" + as_string() + "'");
  }
  return value;
}

double ConfigNode::nonnegative_quantity(Dimension dimension) const {
  const double value = as_quantity(dimension);
  if (value < 0.0) fail("must not be negative, got '" + as_string() + "'");
  return value;
}

std::int64_t ConfigNode::positive_integer() const {
  const std::int64_t value = as_integer();
  if (value <= 0) fail("must be a positive whole number, got '" + as_string() + "'");
  return value;
}

double ConfigNode::fraction() const {
  const double value = as_number();
  if (!(value > 0.0 && value <= 1.0)) {
    fail("must be a fraction in (0, 1], got " + format_number(value));
  }
  return value;
}

std::vector<ConfigNode> ConfigNode::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<ConfigNode> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.push_back(ConfigNode(file_, node_[i], path_ + "[" + std::to_string(i) + "]"));
  }
  return out;
}

MapReader::MapReader(const ConfigNode& node) : node_(node) {
  if (!node.node_.IsMap()) node.fail("expected a map of keys");
  for (const auto& entry : node.node_) {
    const ConfigNode key(node.file_, entry.first, node.path_);
    const std::string name = key.as_string();
    if (!present_.insert(name).second) {
      ConfigNode(node.file_, entry.first, join_path(node.path_, name)).fail("duplicate key");
    }
  }
}

bool MapReader::has(std::string_view key) const { return present_.count(key) > 0; }

ConfigNode MapReader::child(std::string_view key) const {
  for (const auto& entry : node_.node_) {
    if (entry.first.Scalar() == key) {
      return ConfigNode(node_.file_, entry.second, join_path(node_.path_, key));
    }
  }
  node_.fail("internal: missing key");
}

void MapReader::fail_missing(std::string_view key, const std::string& why) const {
  // A misspelt key is the likely cause: point at it instead.
  for (const auto& entry : node_.node_) {
    const std::string& name = entry.first.Scalar();
    if (!known_.count(name) && edit_distance(name, key) < 3) {
      ConfigNode(node_.file_, entry.first, join_path(node_.path_, name))
          .fail("unknown key; did you mean '" + std::string(key) + "'?");
    }
  }
  throw ConfigError(node_.file(), node_.line(), node_.column(), join_path(node_.path_, key),
                    "missing required key" + (why.empty() ? std::string() : ": " + why));
}

ConfigNode MapReader::required(std::string_view key) {
  if (!has(key)) fail_missing(key, "");
  known_.emplace(key);
  ConfigNode value = child(key);
  if (value.node_.IsNull()) value.fail("has no value");
  return value;
}

std::optional<ConfigNode> MapReader::optional(std::string_view key) {
  known_.emplace(key);
  if (!has(key)) return std::nullopt;
  ConfigNode value = child(key);
  if (value.node_.IsNull()) value.fail("has no value");
  return value;
}

void MapReader::finish() const {
  for (const auto& entry : node_.node_) {
    const std::string& name = entry.first.Scalar();
    if (known_.count(name)) continue;
    std::string message = "unknown key";
    std::string best;
    std::size_t best_distance = 3;  // suggest only close matches
    std::string expected;
    for (const std::string& k : known_) {
      expected += (expected.empty() ? "" : ", ") + k;
      const std::size_t d = edit_distance(name, k);
      if (d < best_distance) {
        best_distance = d;
        best = k;
      }
    }
    if (!best.empty()) message += "; did you mean '" + best + "'?";
    message += " (expected one of: " + expected + ")";
    ConfigNode(node_.file_, entry.first, join_path(node_.path_, name)).fail(message);
  }
}

}  // namespace trainsim::models
