#include "models/config/config_override.h"

#include <sstream>

#include <yaml-cpp/yaml.h>

namespace trainsim::models {

std::string ConfigOverride::key() const {
  std::string k = target;
  for (const std::string& part : keys) k += "." + part;
  return k;
}

ConfigOverride make_override(const std::string& key, const std::string& value,
                             const SourceLocation& origin) {
  try {
    (void)YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin, key + "=" + value + ": the value is not valid YAML: " + e.msg);
  }
  ConfigOverride o;
  o.origin = origin;
  o.value = value;
  std::stringstream parts(key);
  for (std::string part; std::getline(parts, part, '.');) {
    if (part.empty()) {
      throw ConfigError(origin, "'" + key + "' has an empty key between dots");
    }
    if (o.target.empty()) {
      o.target = part;
    } else {
      o.keys.push_back(part);
    }
  }
  if (o.target != "cluster" && o.target != "model" && o.target != "job") {
    throw ConfigError(origin, "'" + key +
                                  "': a setting's key starts with cluster., model. or job. "
                                  "(the file it changes), e.g. cluster.nic.bandwidth");
  }
  if (o.keys.empty()) {
    throw ConfigError(origin, "'" + key + "' names a whole file: give a key inside it, e.g. " +
                                  o.target + ".name");
  }
  return o;
}

ConfigOverride parse_override(const std::string& text, const SourceLocation& origin) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) {
    throw ConfigError(origin,
                      "'" + text + "': expected KEY=VALUE, e.g. cluster.nic.bandwidth=200Gb/s");
  }
  return make_override(text.substr(0, eq), text.substr(eq + 1), origin);
}

std::vector<YamlSetting> settings_for(const std::vector<ConfigOverride>& overrides,
                                      const std::string& target) {
  std::vector<YamlSetting> out;
  for (const ConfigOverride& o : overrides) {
    if (o.target == target) out.push_back({o.keys, o.value});
  }
  return out;
}

void rethrow_at_override(const ConfigError& error, const std::vector<ConfigOverride>& overrides,
                         const std::string& target) {
  // The last setting of a key wins, so look from the back.
  for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
    if (it->target != target) continue;
    std::string path;
    for (const std::string& k : it->keys) path += (path.empty() ? "" : ".") + k;
    const std::string& at = error.key_path();
    const bool under = at == path || at.rfind(path + ".", 0) == 0 || at.rfind(path + "[", 0) == 0;
    // An error at the map that holds the key (e.g. "is not a map") counts too.
    const bool above = !at.empty() && path.rfind(at + ".", 0) == 0;
    if (!under && !above) continue;
    const std::string where = at.empty() || at == path ? "" : target + "." + at + ": ";
    throw ConfigError(it->origin, it->key() + "=" + it->value + ": " + where + error.message() +
                                      " (in " + error.file() + ")");
  }
  throw error;
}

}  // namespace trainsim::models
