// One declarative table of a config file's keys drives its reader, its writer and its
// documentation (`trainsim describe`, configs/README.md). A key is a Param: its doc (param_doc.h),
// how it is read when present, what its absence means, when it applies, and how it is written.
// Builders (Params<Spec>::quantity, ::fraction, ...) bind a key to a field of the spec and fill in
// its type, range and range check; keys that need more (lists of maps, cross-key rules) give their
// own read and write functions. Tables list keys in the order they are read and written: a key's
// applies() and read() may look at keys earlier in the table.
#pragma once

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/units.h"
#include "models/config/config_node.h"
#include "models/config/param_doc.h"

namespace trainsim::models {

// How a quantity is written back: value / scale, then the symbol ("1e9, GB/s").
struct WriteUnit {
  double scale;
  const char* symbol;
};
std::string format_quantity(double value, WriteUnit unit);  // "%.10g symbol"
std::string format_plain(double value);                     // "%.10g"
std::string format_whole(double value);                     // "%.0f"
std::string param_type_of(Dimension dimension, WriteUnit unit);

template <class Spec>
struct Param {
  explicit Param(ParamDoc d) : doc(std::move(d)) {}

  ParamDoc doc;
  bool required = false;
  std::string why;  // why a required key is needed, for the message
  // Whether the key is allowed (and written); null: always.
  std::function<bool(const Spec&)> applies;
  // The key is present (for a section: before its keys are read).
  std::function<void(const ConfigNode&, Spec&)> read;
  // The key is absent (and applies): derived defaults, or a conditional requirement.
  std::function<void(MapReader&, Spec&)> absent;
  // The value to write; nullopt: not written (unset). Sections write their keys instead.
  std::function<std::optional<YAML::Node>(const Spec&)> write;
  // Sections: whether to write the section (null: when any key inside it is written).
  std::function<bool(const Spec&)> written;
  bool section = false;
};

template <class Spec>
class ParamTable {
 public:
  using Notes = std::map<std::string, std::string>;

  // `defaults` gives a spec with every default applied, for the default column of keys whose doc
  // does not state one (so the documentation cannot drift from the code).
  ParamTable(std::string title, std::vector<Param<Spec>> params, Spec defaults)
      : title_(std::move(title)), params_(std::move(params)) {
    for (Param<Spec>& p : params_) {
      if (!p.doc.default_text.empty()) continue;
      if (p.required) {
        p.doc.default_text = "required";
      } else if (p.section) {
        p.doc.default_text = "optional";
      } else if (p.write) {
        const auto value = p.write(defaults);
        p.doc.default_text = value ? YAML::Dump(*value) : "unset";
      }
    }
  }

  // Reads every key of the file's root map into `spec`; unknown keys are errors.
  void read(const ConfigNode& root, Spec& spec) const { read_map(root, "", spec); }
  // The spec of a file: `spec` (defaults) with the file's keys read, and its source_file.
  Spec load(const ConfigNode& root, Spec spec = Spec{}) const {
    if constexpr (requires { spec.source_file; }) spec.source_file = root.file();
    read(root, spec);
    return spec;
  }

  // Writes `spec` as the map the reader reads, a comment from `notes` (by key path) after a key.
  void write(YAML::Emitter& out, const Spec& spec, const Notes& notes = {}) const {
    emit(out, collect("", spec), notes);
  }

  ParamTableDoc doc() const {
    ParamTableDoc d{title_, {}};
    for (const Param<Spec>& p : params_) d.params.push_back(p.doc);
    return d;
  }

 private:
  struct Written {
    std::string name;
    std::string path;
    std::optional<YAML::Node> value;
    std::vector<Written> keys;  // a section's
  };

  static std::string parent_of(const std::string& key) {
    const auto dot = key.rfind('.');
    return dot == std::string::npos ? std::string() : key.substr(0, dot);
  }
  static std::string name_of(const std::string& key) {
    const auto dot = key.rfind('.');
    return dot == std::string::npos ? key : key.substr(dot + 1);
  }
  // Keys of list items are read by their list's read().
  static bool in_list(const std::string& key) { return key.find("[]") != std::string::npos; }

  void read_map(const ConfigNode& node, const std::string& prefix, Spec& spec) const {
    MapReader map(node);
    for (const Param<Spec>& p : params_) {
      if (in_list(p.doc.key) || parent_of(p.doc.key) != prefix) continue;
      const std::string name = name_of(p.doc.key);
      const bool applies = !p.applies || p.applies(spec);
      if (const auto value = map.optional(name)) {
        if (!applies) value->fail("applies only to " + p.doc.applies);
        if (p.read) p.read(*value, spec);
        if (p.section) read_map(*value, p.doc.key, spec);
      } else if (applies) {
        if (p.required) map.fail_missing(name, p.why);
        if (p.absent) p.absent(map, spec);
      }
    }
    map.finish();
  }

  std::vector<Written> collect(const std::string& prefix, const Spec& spec) const {
    std::vector<Written> out;
    for (const Param<Spec>& p : params_) {
      if (in_list(p.doc.key) || parent_of(p.doc.key) != prefix) continue;
      if (p.applies && !p.applies(spec)) continue;
      Written w{name_of(p.doc.key), p.doc.key, std::nullopt, {}};
      if (p.section) {
        if (p.written && !p.written(spec)) continue;
        w.keys = collect(p.doc.key, spec);
        if (w.keys.empty() && !p.written) continue;
      } else {
        if (!p.write) continue;
        w.value = p.write(spec);
        if (!w.value) continue;
      }
      out.push_back(std::move(w));
    }
    return out;
  }

  static void emit(YAML::Emitter& out, const std::vector<Written>& keys, const Notes& notes) {
    out << YAML::BeginMap;
    for (const Written& w : keys) {
      out << YAML::Key << w.name << YAML::Value;
      if (w.value) {
        out << *w.value;
      } else {
        emit(out, w.keys, notes);
      }
      const auto note = notes.find(w.path);
      if (note != notes.end()) out << YAML::Comment(note->second);
    }
    out << YAML::EndMap;
  }

  std::string title_;
  std::vector<Param<Spec>> params_;
};

// YAML values of the writer: scalars as text, so numbers keep the precision they are given.
inline YAML::Node yaml_text(const std::string& text) { return YAML::Node(text); }
inline YAML::Node yaml_flag(bool value) { return YAML::Node(value ? "true" : "false"); }
YAML::Node yaml_flow_list(const std::vector<int>& values);

// Builders binding a key to a field. `field` is a generic lambda returning a reference to the
// field, `[](auto& s) -> auto& { return s.gpu.hbm_capacity_bytes; }`, so that one function reads
// and writes.
template <class Spec>
struct Params {
  using P = Param<Spec>;

  static P section(ParamDoc doc) {
    doc.type = "section";
    P p{std::move(doc)};
    p.section = true;
    return p;
  }

  template <class F>
  static P text(ParamDoc doc, F field) {
    if (doc.type.empty()) doc.type = "text";
    P p{std::move(doc)};
    p.read = [field](const ConfigNode& n, Spec& s) { field(s) = n.as_string(); };
    p.write = [field](const Spec& s) -> std::optional<YAML::Node> {
      if (field(s).empty()) return std::nullopt;
      return yaml_text(field(s));
    };
    return p;
  }

  template <class F>
  static P flag(ParamDoc doc, F field) {
    doc.type = "flag";
    doc.range = "true or false";
    P p{std::move(doc)};
    p.read = [field](const ConfigNode& n, Spec& s) { field(s) = n.as_bool(); };
    p.write = [field](const Spec& s) -> std::optional<YAML::Node> { return yaml_flag(field(s)); };
    return p;
  }

  // A whole number from lo (0 or 1) to hi (stored as int, or double for counts beyond int). With
  // lo = 1, a zero in the spec means unset and is not written.
  template <class F>
  static P whole(ParamDoc doc, F field, int lo = 1, long long hi = kNoLimit) {
    doc.type = "whole number";
    if (doc.range.empty()) {
      doc.range = (lo == 1 ? std::string("> 0") : std::string(">= 0")) +
                  (hi == kNoLimit ? std::string() : ", at most " + std::to_string(hi));
    }
    P p{std::move(doc)};
    p.read = [field, lo, hi](const ConfigNode& n, Spec& s) {
      const long long v = lo == 1 ? n.positive_integer() : n.as_integer();
      if (v < 0) n.fail("must not be negative, got '" + n.as_string() + "'");
      // Never more than the field holds (a larger value would wrap).
      using Field = std::remove_cvref_t<decltype(field(s))>;
      const long long limit = std::min(hi, largest_whole<Field>());
      if (v > limit) {
        n.fail("must be at most " + std::to_string(limit) + ", got '" + n.as_string() + "'");
      }
      assign(field(s), static_cast<double>(v));
    };
    p.write = [field, lo](const Spec& s) -> std::optional<YAML::Node> {
      const auto& v = field(s);
      if (!has_value(v) || (lo == 1 && value_of(v) == 0)) return std::nullopt;
      return yaml_text(format_whole(value_of(v)));
    };
    return p;
  }

  // `p` with more done once it is read: a cross-key rule ("must divide ..."), or a value derived
  // from it (where it was given, a default of a later key).
  static P checked(P p, std::function<void(const ConfigNode&, Spec&)> check) {
    auto read = std::move(p.read);
    p.read = [read, check](const ConfigNode& n, Spec& s) {
      read(n, s);
      check(n, s);
    };
    return p;
  }

  // A number for which `ok` holds; `range` says which ("in [0, 1)", "at least 1").
  // `zero_unset`: a zero in the spec means unset and is not written.
  template <class F>
  static P number(ParamDoc doc, F field, std::string range, std::function<bool(double)> ok,
                  bool zero_unset = false) {
    doc.type = "number";
    doc.range = range;
    P p{std::move(doc)};
    p.read = [field, range, ok](const ConfigNode& n, Spec& s) {
      const double v = n.as_number();
      if (!ok(v)) n.fail("must be " + range + ", got " + n.as_string());
      assign(field(s), v);
    };
    p.write = [field, zero_unset](const Spec& s) -> std::optional<YAML::Node> {
      const auto& v = field(s);
      if (!has_value(v) || (zero_unset && value_of(v) == 0)) return std::nullopt;
      return yaml_text(format_plain(value_of(v)));
    };
    return p;
  }

  template <class F>
  static P fraction(ParamDoc doc, F field) {
    doc.type = "fraction";
    doc.range = "(0, 1]";
    P p{std::move(doc)};
    p.read = [field](const ConfigNode& n, Spec& s) { assign(field(s), n.fraction()); };
    p.write = [field](const Spec& s) -> std::optional<YAML::Node> {
      const auto& v = field(s);
      if (!has_value(v) || value_of(v) == 0) return std::nullopt;  // 0: unset
      return yaml_text(format_plain(value_of(v)));
    };
    return p;
  }

  // A quantity with a unit; positive (> 0; 0 in the spec: unset, not written) or not negative.
  template <class F>
  static P quantity(ParamDoc doc, Dimension dimension, WriteUnit unit, F field,
                    bool positive = true) {
    doc.type = param_type_of(dimension, unit);
    if (doc.range.empty()) {
      const QuantityRange r = quantity_range(dimension);
      doc.range = (positive ? "" : "0, or ") + std::string(r.smallest_text) + " to " +
                  std::string(r.largest_text);
    }
    P p{std::move(doc)};
    p.read = [field, dimension, positive](const ConfigNode& n, Spec& s) {
      assign(field(s),
             positive ? n.positive_quantity(dimension) : n.nonnegative_quantity(dimension));
    };
    p.write = [field, unit, positive](const Spec& s) -> std::optional<YAML::Node> {
      const auto& v = field(s);
      if (!has_value(v) || (positive && value_of(v) == 0)) return std::nullopt;
      return yaml_text(format_quantity(value_of(v), unit));
    };
    return p;
  }

  // A time kept as simulator Time, from 0 to `max_seconds` (default: what the simulator's clock
  // holds); `written_zero`: a zero time is written too (else it means unset).
  template <class F>
  static P time(ParamDoc doc, WriteUnit unit, F field, bool written_zero = true,
                double max_seconds = kMaxSeconds) {
    doc.type = param_type_of(Dimension::kTime, unit);
    if (doc.range.empty()) doc.range = ">= 0";
    P p{std::move(doc)};
    p.read = [field, max_seconds](const ConfigNode& n, Spec& s) {
      const double v = n.nonnegative_quantity(Dimension::kTime);
      if (v > max_seconds) {
        n.fail(max_seconds == 60 ? "is longer than a minute" : "is too long to simulate");
      }
      field(s) = time_from_seconds(v);
    };
    p.write = [field, unit, written_zero](const Spec& s) -> std::optional<YAML::Node> {
      const Time t = field(s);
      if (t == 0 && !written_zero) return std::nullopt;
      return yaml_text(format_quantity(to_seconds(t), unit));
    };
    return p;
  }

  template <class E, class F>
  static P choice(ParamDoc doc, const EnumNames<E>& names, F field) {
    doc.type = "name";
    if (doc.range.empty()) doc.range = names.choices();
    P p{std::move(doc)};
    p.read = [field, &names](const ConfigNode& n, Spec& s) { field(s) = n.as_enum(names); };
    p.write = [field, &names](const Spec& s) -> std::optional<YAML::Node> {
      return yaml_text(std::string(names.name(field(s))));
    };
    return p;
  }

  // A key read and written by its own functions (lists of maps, keys with several forms).
  static P custom(ParamDoc doc, std::function<void(const ConfigNode&, Spec&)> read,
                  std::function<std::optional<YAML::Node>(const Spec&)> write) {
    P p{std::move(doc)};
    p.read = std::move(read);
    p.write = std::move(write);
    return p;
  }

  // A key of every item of a list, read by the list's own function (documentation only here).
  static P item(ParamDoc doc) { return P{std::move(doc)}; }

  static constexpr long long kNoLimit = (1LL << 62);

 private:
  // The largest whole number a field of type T stores exactly.
  template <class T>
  static constexpr long long largest_whole() {
    if constexpr (std::is_same_v<T, std::optional<int>> || std::is_same_v<T, int>) {
      return std::numeric_limits<int>::max();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<long long>(std::min<unsigned long long>(
          std::numeric_limits<T>::max(), static_cast<unsigned long long>(kNoLimit)));
    } else {
      return kNoLimit;  // doubles: as_integer() already refuses beyond 9e15
    }
  }
  template <class T>
  static void assign(T& target, double v) {
    if constexpr (std::is_same_v<T, std::optional<int>>) {
      target = static_cast<int>(v);
    } else if constexpr (std::is_same_v<T, std::optional<double>>) {
      target = v;
    } else {
      target = static_cast<T>(v);
    }
  }
  template <class T>
  static bool has_value(const T& v) {
    if constexpr (requires { v.has_value(); }) {
      return v.has_value();
    } else {
      return true;
    }
  }
  template <class T>
  static double value_of(const T& v) {
    if constexpr (requires { v.has_value(); }) {
      return static_cast<double>(*v);
    } else {
      return static_cast<double>(v);
    }
  }
};

}  // namespace trainsim::models
