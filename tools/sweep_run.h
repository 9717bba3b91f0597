// The parts of `trainsim sweep`: a prepared sweep (file, settings, options), one point's
// prediction as a row of CSV or JSON Lines, the output file with resume, and the MPI farm.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "models/config/config_override.h"
#include "models/config/sweep_config.h"
#include "models/scaling/scaling_study.h"
#include "tools/provenance.h"

namespace trainsim::cli {

enum class SweepFormat { kCsv, kJsonLines };

// What points of a sweep share: loaded models (their access distributions keep per-row figures),
// and the baseline of each combination of the other axes. Safe to use from several threads.
struct SweepCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const models::ModelSpec>> models;
  std::map<std::string, models::ScalingPoint> baselines;
};

struct SweepJob {
  models::SweepSpec spec;
  std::vector<models::ConfigOverride> settings;  // --set, applied before the axes
  models::ScalingStudyOptions study;
  std::string network;  // flow or analytic
  SweepFormat format = SweepFormat::kCsv;
  std::uint64_t signature = 0;  // the file, --set and options: what the rows depend on
  Provenance provenance;        // recorded in the header: settings, seed, files with hashes
  int repeat = 1;               // --repeat: runs per point (seeds seed to seed + repeat - 1)
  std::shared_ptr<SweepCache> cache = std::make_shared<SweepCache>();
};

// One point's prediction (or why it has none, e.g. a plan that does not fit).
struct SweepResult {
  std::size_t index = 0;
  std::vector<std::string> values;  // per axis
  std::optional<models::ScalingPoint> point;
  std::string error;
};

SweepJob prepare_sweep(const boost::program_options::variables_map& vm);
// Loads the configs once for every value of every axis (the others at their first value): an
// unknown key or a bad value is a ConfigError at the axis, before anything runs.
void validate_sweep(const SweepJob& job);
SweepResult evaluate_point(const SweepJob& job, std::size_t index);
std::string render_row(const SweepJob& job, const SweepResult& result);

// The output: standard output, or a file that may already hold rows of the same sweep (their
// points are skipped; a file from another sweep is refused, untouched).
class SweepOutput {
 public:
  SweepOutput(const SweepJob& job, const boost::program_options::variables_map& vm,
              std::ostream& out);
  bool done(std::size_t index) const { return done_.count(index) > 0; }
  void write(std::size_t index, const std::string& row);
  void finish();
  const std::string& path() const { return path_; }
  // Everything the output holds now (the file, or what went to standard output).
  std::string text() const;

 private:
  std::ostream* out_ = nullptr;
  std::string copy_;                // standard output only
  std::string header_;              // the header's JSON
  bool legacy_csv_header_ = false;  // a CSV resumed from an earlier release: header in the file
  std::ofstream file_;
  std::string path_;
  std::set<std::size_t> done_;
};

// Merges outputs of `job`'s sweep (slices of an array job, in its format) into `output` (which
// may hold rows already): each point once, in index order, with its header. Throws ConfigError
// for a file of another sweep or format, or a damaged row; returns the points it holds.
std::size_t merge_sweep_outputs(const SweepJob& job, const std::vector<std::string>& slices,
                                const std::string& output);

// A sweep over MPI ranks, under mpirun with more than one rank; inactive otherwise (a plain run
// never initialises MPI). MPI is finalised when this goes out of scope.
class SweepMpi {
 public:
  SweepMpi();
  ~SweepMpi();
  SweepMpi(const SweepMpi&) = delete;
  SweepMpi& operator=(const SweepMpi&) = delete;
  int rank() const { return rank_; }  // -1: not distributed
  // Rank 0: hands the points out to the other ranks and writes the rows in index order.
  void coordinate(const SweepJob& job, const std::vector<std::size_t>& todo, SweepOutput& output);
  // The other ranks: simulate the points rank 0 sends until it says stop; they touch no file.
  void work(const SweepJob& job);

 private:
  struct State;
  std::unique_ptr<State> state_;
  int rank_ = -1;
};

}  // namespace trainsim::cli
