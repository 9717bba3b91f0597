#include "models/spec/config_error.h"

#include <filesystem>
#include <fstream>
#include <sstream>
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

std::string read_input_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(path, 0, 0, "", "is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(path, 0, 0, "",
                      std::filesystem::exists(path, ec) ? "cannot read the file"
                                                        : "cannot open the file: it does not exist");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path, 0, 0, "", "cannot read the file");
  return text.str();
}

}  // namespace trainsim::models
