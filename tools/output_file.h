// Output files that appear only when everything succeeded: content goes to a temporary file next
// to the target, and commit() renames it into place. Destroying an uncommitted file removes the
// temporary, so a failed run leaves no partial output.
#pragma once

#include <fstream>
#include <optional>
#include <ostream>
#include <string>

namespace trainsim::cli {

class AtomicOutputFile {
 public:
  explicit AtomicOutputFile(std::string path);  // throws std::runtime_error if it cannot be created
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  std::ostream& stream() { return out_; }
  void commit();  // throws std::runtime_error if writing or renaming failed

 private:
  std::string path_;
  std::string temp_path_;
  std::ofstream out_;
  bool committed_ = false;
};

// `text` to the file at `path` (as above), or to `out` without a path.
void write_output(const std::optional<std::string>& path, std::ostream& out,
                  const std::string& text);

}  // namespace trainsim::cli
