#include "models/collectives/nccl_tests_log.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "models/spec/config_error.h"

namespace trainsim::models {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Strips a launcher prefix: MPI's "[1,0]<stdout>:", Slurm's "0: " (srun --label).
std::string strip_launcher_prefix(const std::string& line) {
  static const std::regex prefix(R"(^(\[\d+,\d+\]<(stdout|stderr)>:|\s*\d+: ))");
  std::smatch m;
  if (std::regex_search(line, m, prefix)) return m.suffix().str();
  return line;
}

// Column layout of a results table, from its header line.
struct Layout {
  bool has_root = false;
  bool has_in_place = false;
  std::size_t columns = 0;
};

class Parser {
 public:
  Parser(const std::string& name, std::optional<CollectiveOp> op) : name_(name), op_(op) {
    log_.file = name;
  }

  void line(int number, const std::string& raw) {
    line_ = number;
    const std::string text = strip_launcher_prefix(raw);
    const auto words = split_words(text);
    if (words.empty()) return;
    static const std::regex gpus(R"(\bnGpus\s+(\d+))");
    std::smatch m;
    if (log_.gpus_per_thread == 0 && std::regex_search(text, m, gpus)) {
      const long long n = integer(m[1].str(), "nGpus");
      if (n < 1 || n > 1024) fail(line_, "nGpus must be 1 to 1024, got " + m[1].str());
      log_.gpus_per_thread = static_cast<int>(n);
    }
    if (words[0] == ">" || words[0][0] == '>') {
      command(words);
    } else if (std::isdigit(static_cast<unsigned char>(words[0][0]))) {
      data(words);
    } else {
      // Comments, and the same lines printed without their '#' (some renderings drop it);
      // anything else (launcher chatter, warnings) matches nothing and is not part of the results.
      comment(text, words);
    }
  }

  NcclTestsLog finish() {
    for (Pending& p : runs_) {
      if (!p.run.rows.empty()) log_.runs.push_back(std::move(p.run));
    }
    if (log_.runs.empty()) {
      fail(0, "no data rows: not an nccl-tests log, or the run printed no results");
    }
    return std::move(log_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& message) const {
    throw ConfigError(name_, line, line > 0 ? 1 : 0, "", message);
  }

  void comment(const std::string& text, const std::vector<std::string>& words) {
    static const std::regex starting(R"(Collective test starting:\s*(\S+))");
    static const std::regex rank(
        R"(^#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$)");
    static const std::regex avg(R"(Avg bus bandwidth\s*:\s*([0-9.eE+-]+))");
    static const std::regex version(R"((nccl-library=\S+|NCCL version \S+))");
    std::smatch m;
    if (runs_.empty() && (text.rfind("# SOURCE:", 0) == 0 || text.rfind("# PATH:", 0) == 0 ||
                          text.rfind("# NOTE:", 0) == 0 || text.rfind("#         ", 0) == 0)) {
      log_.provenance.push_back(text);
      // A command the provenance quotes ("... ./all_reduce_perf -b 8 ...") names the collective
      // of tables that have no 'Collective test starting' line.
      static const std::regex perf(R"(([a-z_]+)_perf)");
      for (auto it = std::sregex_iterator(text.begin(), text.end(), perf);
           it != std::sregex_iterator() && !quoted_op_; ++it) {
        quoted_op_ = parse_collective((*it)[1].str());
      }
    }
    if (std::regex_search(text, m, version) && log_.nccl_version.empty()) {
      log_.nccl_version = m[1].str();
    }
    if (std::regex_search(text, m, starting)) {
      named_run(m[1].str());
      return;
    }
    if (text.find("Using devices") != std::string::npos) {
      // A new device list starts a new run unless the current one has no rows yet.
      if (runs_.empty() || !runs_.back().run.rows.empty()) new_unnamed_run();
      runs_.back().run.ranks = 0;
      runs_.back().run.hosts.clear();
      return;
    }
    if (std::regex_search(text, m, rank)) {
      if (runs_.empty()) new_unnamed_run();
      NcclTestsRun& run = runs_.back().run;
      ++run.ranks;
      const std::string host = m[2].str();
      if (std::find(run.hosts.begin(), run.hosts.end(), host) == run.hosts.end()) {
        run.hosts.push_back(host);
      }
      if (run.gpu.empty()) run.gpu = m[3].str();
      return;
    }
    if (std::regex_search(text, m, avg)) {
      if (!runs_.empty()) {
        runs_.back().run.avg_busbw_gb_per_s = number(m[1].str(), "average bus bandwidth");
      }
      return;
    }
    if (words.size() >= 4 && std::find(words.begin(), words.end(), "size") != words.end() &&
        std::find(words.begin(), words.end(), "count") != words.end()) {
      header(words);
    }
  }

  void command(const std::vector<std::string>& words) {
    // "> ./build/all_reduce_perf -b 8 ..." names the collective of the run that follows.
    for (const std::string& w : words) {
      const std::string base =
          w.substr(w.find_last_of('/') == std::string::npos ? 0 : w.find_last_of('/') + 1);
      if (base.size() > 5 && base.substr(base.size() - 5) == "_perf") {
        named_run(base);
        return;
      }
    }
  }

  void named_run(const std::string& name) {
    const auto op = parse_collective(name);
    if (!op) fail(line_, "unknown collective '" + name + "'");
    // A run without rows yet (its device list may already be read) takes the name.
    if (runs_.empty() || !runs_.back().run.rows.empty()) new_unnamed_run();
    runs_.back().run.op = *op;
    runs_.back().named = true;
  }

  void new_unnamed_run() {
    Pending p;
    p.run.first_line = line_;
    runs_.push_back(p);
  }

  void header(const std::vector<std::string>& words) {
    // Words after '#': size count type redop [root] time algbw busbw #wrong|error [time algbw busbw
    // #wrong|error]
    std::vector<std::string> names;
    for (const std::string& w : words) {
      if (w == "#") continue;
      names.push_back(w[0] == '#' && w.size() > 1 && w != "#wrong" ? w.substr(1) : w);
    }
    Layout layout;
    layout.has_root = std::find(names.begin(), names.end(), "root") != names.end();
    const auto times = std::count(names.begin(), names.end(), "time");
    if (times < 1 || names.size() < 7) fail(line_, "unrecognised results header");
    layout.has_in_place = times >= 2;
    layout.columns = names.size();
    if (runs_.empty()) new_unnamed_run();
    runs_.back().layout = layout;
    runs_.back().has_layout = true;
  }

  double number(const std::string& word, const char* what) const {
    if (word == "N/A" || word == "n/a") return kNaN;
    double value = 0.0;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (ec != std::errc() || ptr != word.data() + word.size()) {
      fail(line_, std::string("the ") + what + " column is not a number: '" + word + "'");
    }
    return value;
  }

  long long integer(const std::string& word, const char* what) const {
    long long value = 0;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (ec != std::errc() || ptr != word.data() + word.size() || value < 0) {
      fail(line_, std::string("the ") + what + " column is not a whole number: '" + word + "'");
    }
    return value;
  }

  void data(const std::vector<std::string>& words) {
    if (runs_.empty() || !runs_.back().has_layout) {
      fail(line_, "data row before any results header ('#  size  count  type ...')");
    }
    Pending& pending = runs_.back();
    if (!pending.named && (op_ || quoted_op_)) {
      pending.run.op = op_ ? *op_ : *quoted_op_;
      pending.named = true;
    }
    if (!pending.named) {
      fail(line_,
           "cannot tell which collective this table is (no 'Collective test starting' "
           "line or command line before it): name it (trainsim calibrate LOG:all_reduce, "
           "a validation case's op:)");
    }
    const Layout& layout = pending.layout;
    // Some builds print only out-of-place columns even under a full header; accept both widths.
    const std::size_t oop_columns = layout.has_root ? 9 : 8;
    if (words.size() != layout.columns && words.size() != oop_columns) {
      fail(line_, "expected " + std::to_string(layout.columns) + " columns, found " +
                      std::to_string(words.size()));
    }
    NcclTestsRow row;
    row.line = line_;
    row.size_bytes = integer(words[0], "size");
    row.count = integer(words[1], "count");
    row.type = words[2];
    row.redop = words[3];
    std::size_t i = 4;
    if (layout.has_root) {
      const double root = number(words[i++], "root");
      if (!(root >= -1 && root <= 1 << 24) || std::floor(root) != root) {
        fail(line_, "the root column is not a rank: '" + words[i - 1] + "'");
      }
      row.root = static_cast<int>(root);
    }
    row.time_us = number(words[i++], "time");
    row.algbw_gb_per_s = number(words[i++], "algbw");
    row.busbw_gb_per_s = number(words[i++], "busbw");
    ++i;  // #wrong / error
    row.in_place_time_us = row.in_place_algbw_gb_per_s = row.in_place_busbw_gb_per_s = kNaN;
    if (words.size() >= i + 3) {
      row.in_place_time_us = number(words[i++], "in-place time");
      row.in_place_algbw_gb_per_s = number(words[i++], "in-place algbw");
      row.in_place_busbw_gb_per_s = number(words[i++], "in-place busbw");
    }
    if (!(row.time_us > 0.0))
      fail(line_, "the time column must be a positive number of microseconds");
    pending.run.rows.push_back(row);
  }

  struct Pending {
    NcclTestsRun run;
    Layout layout;
    bool has_layout = false;
    bool named = false;
  };

  std::string name_;
  std::optional<CollectiveOp> op_;         // the caller says which collective the log is
  std::optional<CollectiveOp> quoted_op_;  // a command in the provenance lines says so
  int line_ = 0;
  std::vector<Pending> runs_;
  NcclTestsLog log_;
};

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& name,
                                  std::optional<CollectiveOp> op) {
  Parser parser(name, op);
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    try {
      parser.line(++number, line);
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      // Whatever a malformed line makes a library call throw is that line's error.
      throw ConfigError(name, number, 1, "", std::string("cannot read this line: ") + e.what());
    }
  }
  return parser.finish();
}

NcclTestsLog read_nccl_tests_log(const std::string& path, std::optional<CollectiveOp> op) {
  return parse_nccl_tests_log(read_input_file(path), path, op);
}

}  // namespace trainsim::models
