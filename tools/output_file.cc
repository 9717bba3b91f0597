#include "tools/output_file.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace trainsim::cli {

namespace {

// Temporaries that exist right now, for the signal handler: fixed storage, since a handler may
// only read memory and call async-signal-safe functions (unlink, signal, raise).
constexpr int kSlots = 8;
constexpr std::size_t kPathBytes = 4096;
char temp_paths[kSlots][kPathBytes];
volatile std::sig_atomic_t slot_used[kSlots];

extern "C" void remove_temporaries(int signal_number) {
  for (int i = 0; i < kSlots; ++i) {
    if (slot_used[i]) ::unlink(temp_paths[i]);
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void install_handlers() {
  static const bool installed = [] {
    for (const int s : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction action {};
      action.sa_handler = remove_temporaries;
      sigemptyset(&action.sa_mask);
      struct sigaction previous {};
      // A signal the caller chose to ignore stays ignored.
      if (sigaction(s, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
      sigaction(s, &action, nullptr);
    }
    return true;
  }();
  (void)installed;
}

// Registers `path` before the file is created; -1 when the list is full or the path too long
// (then an interruption may leave it behind).
int register_temporary(const std::string& path) {
  install_handlers();
  if (path.size() + 1 > kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    if (slot_used[i]) continue;
    std::memcpy(temp_paths[i], path.c_str(), path.size() + 1);
    slot_used[i] = 1;
    return i;
  }
  return -1;
}

void unregister_temporary(int& slot) {
  if (slot >= 0) slot_used[slot] = 0;
  slot = -1;
}

}  // namespace

AtomicOutputFile::AtomicOutputFile(std::string path)
    : path_(std::move(path)), temp_path_(path_ + ".tmp." + std::to_string(::getpid())) {
  // Can we write there? Create and remove the temporary now, so a run fails before its work.
  slot_ = register_temporary(temp_path_);
  const bool writable = static_cast<bool>(std::ofstream(temp_path_, std::ios::binary));
  std::error_code ignored;
  std::filesystem::remove(temp_path_, ignored);
  unregister_temporary(slot_);
  if (!writable) throw std::runtime_error("cannot write " + path_);
}

AtomicOutputFile::~AtomicOutputFile() {
  if (slot_ >= 0) {
    std::error_code ignored;
    std::filesystem::remove(temp_path_, ignored);
    unregister_temporary(slot_);
  }
}

void AtomicOutputFile::commit() {
  slot_ = register_temporary(temp_path_);
  std::error_code ec;
  {
    std::ofstream file(temp_path_, std::ios::binary | std::ios::trunc);
    const std::string text = out_.str();
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    file.flush();
    if (!file) {
      file.close();
      std::filesystem::remove(temp_path_, ec);
      unregister_temporary(slot_);
      throw std::runtime_error("error while writing " + path_);
    }
  }
  std::filesystem::rename(temp_path_, path_, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp_path_, ignored);
    unregister_temporary(slot_);
    throw std::runtime_error("cannot write " + path_ + ": " + ec.message());
  }
  unregister_temporary(slot_);
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
