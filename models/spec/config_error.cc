#include "models/spec/config_error.h"

#include <utility>

namespace trainsim::models {

namespace {

std::string format(const std::string& file, int line, int column, const std::string& key_path,
                   const std::string& message) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!key_path.empty()) out += key_path + ": ";
  return out + message;
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, int column, std::string key_path,
                         std::string message)
    : std::runtime_error(format(file, line, column, key_path, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      key_path_(std::move(key_path)),
      message_(std::move(message)) {}

}  // namespace trainsim::models
