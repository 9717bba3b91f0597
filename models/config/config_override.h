// Settings that change a config as it is loaded: `--set cluster.nic.bandwidth=200Gb/s` and the
// axes of a sweep. A setting names its file (cluster, model or job) and the key path inside it; an
// error at that key is reported at the setting (the --set text, or the sweep file's line).
#pragma once

#include <string>
#include <vector>

#include "models/spec/config_error.h"
#include "models/spec/setting.h"

namespace trainsim::models {

struct ConfigOverride {
  std::string target;             // "cluster", "model" or "job"
  std::vector<std::string> keys;  // inside that file
  std::string value;              // YAML text
  SourceLocation origin;          // where it was given (file "--set" for the command line)
  std::string key() const;        // "cluster.nic.bandwidth"
};

// "cluster.nic.bandwidth=200 Gb/s" given at `origin`. Throws ConfigError (at origin) without '=',
// or for a key that does not start with cluster., model. or job.
ConfigOverride parse_override(const std::string& text, const SourceLocation& origin);
ConfigOverride make_override(const std::string& key, const std::string& value,
                             const SourceLocation& origin);

// The settings of `overrides` that apply to `target`.
std::vector<YamlSetting> settings_for(const std::vector<ConfigOverride>& overrides,
                                      const std::string& target);

// Calls `load()` (which loads `target`'s file with settings_for(overrides, target)); a ConfigError
// at or under an overridden key is rethrown at the override's origin, naming the override.
template <class Load>
auto load_with_overrides(const std::vector<ConfigOverride>& overrides, const std::string& target,
                         Load load) -> decltype(load());

[[noreturn]] void rethrow_at_override(const ConfigError& error,
                                      const std::vector<ConfigOverride>& overrides,
                                      const std::string& target);

template <class Load>
auto load_with_overrides(const std::vector<ConfigOverride>& overrides, const std::string& target,
                         Load load) -> decltype(load()) {
  try {
    return load();
  } catch (const ConfigError& e) {
    rethrow_at_override(e, overrides, target);
  }
}

}  // namespace trainsim::models
