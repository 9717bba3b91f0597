#include "models/config/yaml_patch.h"

#include <cstdio>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "models/spec/config_error.h"

namespace trainsim::models {

namespace {

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '.')) parts.push_back(part);
  return parts;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

int indent_of(const std::string& line) {
  const auto first = line.find_first_not_of(' ');
  return first == std::string::npos ? -1 : static_cast<int>(first);
}

// The unit a scalar was written with ("0.5 us" -> "us"), if any.
std::string unit_of(const std::string& scalar) {
  const auto space = scalar.find(' ');
  return space == std::string::npos ? "" : scalar.substr(space + 1);
}

// Default units when a key is new or had none.
std::string default_unit(std::optional<Dimension> d) {
  if (!d) return "";
  switch (*d) {
    case Dimension::kTime:
      return "us";
    case Dimension::kBandwidth:
      return "GB/s";
    case Dimension::kBytes:
      return "B";
    case Dimension::kFlops:
      return "GFLOP";
    case Dimension::kFlopRate:
      return "TFLOP/s";
  }
  return "";
}

}  // namespace

std::string format_in_unit(double value, std::optional<Dimension> dimension,
                           const std::string& unit) {
  char buffer[64];
  if (!dimension || unit.empty()) {
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
  }
  const auto one = parse_quantity("1 " + unit, *dimension);
  const double scale = one ? *one : 1.0;
  std::snprintf(buffer, sizeof buffer, "%.6g %s", value / scale, unit.c_str());
  return buffer;
}

YamlPatchResult patch_yaml(const std::string& text, const std::string& file,
                           const std::vector<YamlUpdate>& updates) {
  YamlPatchResult result;
  std::vector<std::string> lines = lines_of(text);
  for (const YamlUpdate& u : updates) {
    YAML::Node root;
    try {
      root = YAML::Load(join(lines));
    } catch (const YAML::Exception& e) {
      throw ConfigError(file, e.mark.line + 1, e.mark.column + 1, "", "invalid YAML: " + e.msg);
    }
    const std::vector<std::string> parts = split(u.key_path);
    // Walk as far as the file goes.
    YAML::Node node = root;
    std::size_t depth = 0;
    std::vector<YAML::Node> chain = {root};
    int key_line = -1;  // line of the last key found
    for (; depth < parts.size(); ++depth) {
      if (!node.IsMap() || !node[parts[depth]]) break;
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (it->first.Scalar() == parts[depth]) key_line = it->first.Mark().line;
      }
      node = node[parts[depth]];
      chain.push_back(node);
    }
    if (depth == parts.size()) {
      // Replace the scalar where it stands.
      const YAML::Mark mark = node.Mark();
      if (!node.IsScalar() || mark.line < 0 || mark.line >= static_cast<int>(lines.size())) {
        throw ConfigError(file, mark.line + 1, mark.column + 1, u.key_path, "is not a value");
      }
      std::string& line = lines[mark.line];
      const std::string old = node.Scalar();
      const auto at = line.find(old, mark.column);
      if (at == std::string::npos) {
        throw ConfigError(file, mark.line + 1, mark.column + 1, u.key_path,
                          "cannot edit this value in place (quoted or split over lines)");
      }
      const std::string unit = unit_of(old).empty() ? default_unit(u.dimension) : unit_of(old);
      const std::string value = format_in_unit(u.value, u.dimension, unit);
      line.replace(at, old.size(), value);
      if (line.find('#', at + value.size()) == std::string::npos && !u.comment.empty()) {
        line += "  # " + u.comment;
      }
      result.replaced.push_back({u.key_path, mark.line + 1, old});
      continue;
    }
    // Add the missing keys under the deepest map that exists.
    const YAML::Node& parent = chain.back();
    int insert_at = static_cast<int>(lines.size());
    int indent = 0;
    if (depth > 0 && parent.IsNull() && key_line >= 0) {
      // "key:" with nothing under it yet.
      indent = indent_of(lines[key_line]) + 2;
      insert_at = key_line + 1;
    } else if (depth > 0) {
      if (!parent.IsMap() || parent.Style() == YAML::EmitterStyle::Flow) {
        throw ConfigError(file, parent.Mark().line + 1, parent.Mark().column + 1, u.key_path,
                          "cannot add a key here (not a block map)");
      }
      // Children share one indent; insert after the parent's last descendant.
      const int first_child = parent.begin()->first.Mark().line;
      indent = indent_of(lines[first_child]);
      // Insert after the parent's last descendant line: the last line from the first child on
      // whose indent is at least the children's (blank and comment lines included).
      int last = first_child;
      for (int l = first_child + 1; l < static_cast<int>(lines.size()); ++l) {
        const int i = indent_of(lines[l]);
        if (i < 0) continue;
        const bool comment = lines[l][i] == '#';
        if (i < indent && !comment) break;
        if (i >= indent && !comment) last = l;
      }
      insert_at = last + 1;
    }
    std::vector<std::string> added;
    for (std::size_t k = depth; k < parts.size(); ++k) {
      const std::string pad(static_cast<std::size_t>(indent + 2 * static_cast<int>(k - depth)), ' ');
      if (k + 1 < parts.size()) {
        added.push_back(pad + parts[k] + ":");
      } else {
        const std::string value = format_in_unit(u.value, u.dimension, default_unit(u.dimension));
        added.push_back(pad + parts[k] + ": " + value + (u.comment.empty() ? "" : "  # " + u.comment));
      }
    }
    lines.insert(lines.begin() + insert_at, added.begin(), added.end());
  }
  result.text = join(lines);
  return result;
}

}  // namespace trainsim::models
