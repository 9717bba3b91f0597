// A value set on a config file from outside it (--set, a sweep axis).
#pragma once

#include <string>
#include <vector>

namespace trainsim::models {

// A value put at a key path of a file as it is loaded (from --set or a sweep axis): `keys` inside
// the file, `value` as YAML text. Missing maps on the way are created.
struct YamlSetting {
  std::vector<std::string> keys;
  std::string value;
};

}  // namespace trainsim::models
