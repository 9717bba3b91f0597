// Output files that appear only when everything succeeded, and never half-written: content is
// kept in memory until commit(), which writes it to a temporary file next to the target and
// renames that into place. Creating the object checks that the target's folder is writable (so a
// run fails before simulating, not after). A temporary exists only while commit() writes it; if
// the process is interrupted then (SIGINT, SIGTERM, SIGHUP), a signal handler removes it. A
// failed or interrupted run leaves no partial output and no temporary file.
#pragma once

#include <optional>
#include <ostream>
#include <sstream>
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
  std::ostringstream out_;
  int slot_ = -1;  // the temporary's entry in the signal handler's list, while it exists
};

// `text` to the file at `path` (as above), or to `out` without a path.
void write_output(const std::optional<std::string>& path, std::ostream& out,
                  const std::string& text);

}  // namespace trainsim::cli
