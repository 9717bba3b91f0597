#include "tools/output_file.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace trainsim::cli {

AtomicOutputFile::AtomicOutputFile(std::string path)
    : path_(std::move(path)),
      temp_path_(path_ + ".tmp." + std::to_string(::getpid())),
      out_(temp_path_, std::ios::binary | std::ios::trunc) {
  if (!out_) throw std::runtime_error("cannot write " + path_);
}

AtomicOutputFile::~AtomicOutputFile() {
  if (!committed_) {
    out_.close();
    std::error_code ignored;
    std::filesystem::remove(temp_path_, ignored);
  }
}

void AtomicOutputFile::commit() {
  out_.flush();
  if (!out_) throw std::runtime_error("error while writing " + path_);
  out_.close();
  std::error_code ec;
  std::filesystem::rename(temp_path_, path_, ec);
  if (ec) throw std::runtime_error("cannot write " + path_ + ": " + ec.message());
  committed_ = true;
}

void write_output(const std::optional<std::string>& path, std::ostream& out,
                  const std::string& text) {
  if (!path) {
    out << text;
    return;
  }
  AtomicOutputFile file(*path);
  file.stream() << text;
  file.commit();
}

}  // namespace trainsim::cli
