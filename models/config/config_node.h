// Reading YAML configs with errors that point at the file, line, column and key path. Only the
// loaders in models/config see YAML; they turn it into the plain structs the models use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/config/quantity.h"
#include "models/spec/config_error.h"
#include "models/spec/enum_names.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode {
 public:
  // Parses a YAML file; throws ConfigError if it cannot be read or is not valid YAML.
  static ConfigNode load_file(const std::string& path);
  // The same with `settings` applied (a key on the way that is not a map: ConfigError naming the
  // key path).
  static ConfigNode load_file(const std::string& path, const std::vector<YamlSetting>& settings);
  // Parses YAML text; `name` stands for the file in messages.
  static ConfigNode load_string(const std::string& text, const std::string& name);

  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }
  SourceLocation location() const { return {file(), line(), column(), path_}; }
  int line() const;    // 1-based
  int column() const;  // 1-based

  [[noreturn]] void fail(const std::string& message) const;

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  std::string as_string() const;
  std::string as_yaml() const;  // the node as flow-style YAML text (lists, maps)
  double as_number() const;
  std::int64_t as_integer() const;
  bool as_bool() const;
  // A number with a unit of `dimension` (see quantity.h), in base units.
  double as_quantity(Dimension dimension) const;
  std::vector<ConfigNode> items() const;  // elements of a sequence
  // One of an enum's names ("must be a, b or c, got 'x'" otherwise).
  template <class E>
  E as_enum(const EnumNames<E>& names) const {
    const std::string text = as_string();
    const auto value = names.parse(text);
    if (!value) fail("must be " + names.choices() + ", got '" + text + "'");
    return *value;
  }

  // Range checks that fail with a message naming the value.
  double positive_quantity(Dimension dimension) const;
  double nonnegative_quantity(Dimension dimension) const;
  std::int64_t positive_integer() const;
  double fraction() const;  // a number in (0, 1]

 private:
  ConfigNode(std::shared_ptr<const std::string> file, YAML::Node node, std::string path);
  friend class MapReader;

  std::shared_ptr<const std::string> file_;
  YAML::Node node_;
  std::string path_;
};

// Reads the keys of one YAML map. Every key asked for (required or optional) is known; finish()
// rejects any other key, suggesting the closest known one.
class MapReader {
 public:
  explicit MapReader(const ConfigNode& node);

  ConfigNode required(std::string_view key);
  std::optional<ConfigNode> optional(std::string_view key);
  bool has(std::string_view key) const;
  // Every key of the map, in sorted order (for maps whose keys are data, such as env: {...}).
  std::vector<std::string> keys() const { return {present_.begin(), present_.end()}; }
  const ConfigNode& node() const { return node_; }

  // Fails as a missing `key` of this map, explaining why it is needed.
  [[noreturn]] void fail_missing(std::string_view key, const std::string& why) const;

  // Fails on the first key that was never asked for.
  void finish() const;

 private:
  ConfigNode child(std::string_view key) const;

  ConfigNode node_;
  std::set<std::string, std::less<>> present_;
  std::set<std::string, std::less<>> known_;
};

}  // namespace trainsim::models
