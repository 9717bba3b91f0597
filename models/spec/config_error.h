// The error every bad input produces: which file, where in it, which key, and what is wrong.
// The CLI prints it and exits with status 2.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::models {

// Where a value came from, kept in specs for checks that span files (e.g. a model's compute
// format that the cluster's GPU lacks).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
  std::string key_path;
};

class ConfigError : public std::runtime_error {
 public:
  ConfigError(const SourceLocation& where, std::string message)
      : ConfigError(where.file, where.line, where.column, where.key_path, std::move(message)) {}
  // line and column are 1-based; 0 means unknown (e.g. a file that cannot be opened).
  ConfigError(std::string file, int line, int column, std::string key_path, std::string message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string key_path_;
  std::string message_;
};

// The whole of an input file. Throws ConfigError naming it for a directory, a file that does not
// exist or cannot be read.
std::string read_input_file(const std::string& path);

}  // namespace trainsim::models
