// Names of enum values, one table per enum: the name a config file, a flag or an output uses for
// each value (the first entry of a value), aliases that also parse (later entries of the same
// value), and the list of names for messages ("flow or analytic").
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim::models {

template <class E>
class EnumNames {
 public:
  EnumNames(std::initializer_list<std::pair<E, std::string_view>> entries) : entries_(entries) {
    for (const auto& [value, name] : entries_) {
      bool seen = false;
      for (const E v : values_) seen = seen || v == value;
      if (!seen) values_.push_back(value);
    }
  }

  std::string_view name(E value) const {
    for (const auto& [v, n] : entries_) {
      if (v == value) return n;
    }
    return "?";
  }
  std::optional<E> parse(std::string_view text) const {
    for (const auto& [v, n] : entries_) {
      if (n == text) return v;
    }
    return std::nullopt;
  }
  // Every value, in the table's order.
  const std::vector<E>& values() const { return values_; }
  // "a, b or c" (the names of every value, without aliases).
  std::string choices() const {
    std::string out;
    for (std::size_t i = 0; i < values_.size(); ++i) {
      if (i > 0) out += i + 1 == values_.size() ? " or " : ", ";
      out += name(values_[i]);
    }
    return out;
  }

 private:
  std::vector<std::pair<E, std::string_view>> entries_;
  std::vector<E> values_;
};

}  // namespace trainsim::models
