// Edits a YAML file's text in place, so that what a person wrote stays: comments, key order,
// layout and units. A key's value is replaced where it stands (in the unit it was written in, if
// it had one, and with its comment kept); a key the file lacks is added under its parent map (made
// at the end of the file if missing too), with a comment.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/config/quantity.h"

namespace trainsim::models {

struct YamlUpdate {
  std::string key_path;  // "nic.efficiency", "collectives.launch_latency"
  double value = 0.0;    // in base units (seconds, bytes/s, ...), or a plain number
  std::optional<Dimension> dimension;  // unset: a plain number
  std::string comment;                 // for lines the patch adds, or that had no comment
};

struct YamlPatchResult {
  std::string text;
  // Keys whose value the file set before (file line and the old text), for warnings.
  struct Replaced {
    std::string key_path;
    int line = 0;
    std::string old_value;
  };
  std::vector<Replaced> replaced;
};

// Throws ConfigError (named `file`) when the text is not YAML, or a key's parent is not a block
// map.
YamlPatchResult patch_yaml(const std::string& text, const std::string& file,
                           const std::vector<YamlUpdate>& updates);

// A value in the given unit ("0.62 us", "48.5 GB/s"); a plain number for no unit.
std::string format_in_unit(double value, std::optional<Dimension> dimension,
                           const std::string& unit);

}  // namespace trainsim::models
