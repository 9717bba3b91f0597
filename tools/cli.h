// The trainsim command line: `trainsim COMMAND [options]`. run_cli() does all the work and returns
// the exit status (0 success, 1 runtime failure, 2 bad input or usage, 3 internal error), so tests
// can call it in-process; main() only forwards to it.
#pragma once

#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <functional>

#include <boost/program_options.hpp>

#include "models/calibration/collective_calibration.h"
#include "models/config/config_override.h"
#include "models/scaling/scaling_study.h"
#include "models/scenario/scenario.h"

namespace trainsim::cli {

// A command-line mistake: printed with a pointer to --help, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternalError = 3;

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Resolves a path given on the command line or as a default: as given if it exists, else relative
// to the trainsim source tree (so the shipped configs work from any directory).
std::string resolve_config_path(const std::string& path);

// Parses a command's options; a mistake (unknown option, stray argument, bad value) is a
// UsageError naming the command.
boost::program_options::variables_map parse_options(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const std::string& command);

// The same with one positional argument, stored under the name `positional`.
boost::program_options::variables_map parse_options(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const std::string& command,
    const std::string& positional);

// The same with any number of positional arguments, stored as a list under `positional`.
boost::program_options::variables_map parse_options_list(
    const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const std::string& command,
    const std::string& positional);

// The value of --output, if given.
inline std::optional<std::string> output_path(const boost::program_options::variables_map& vm) {
  if (!vm.count("output")) return std::nullopt;
  return vm["output"].as<std::string>();
}

// The value of option `name`, one of the names of an enum ("--network must be flow or analytic,
// not 'x'" otherwise).
template <class E>
E parse_choice(const boost::program_options::variables_map& vm, const std::string& name,
               const models::EnumNames<E>& names) {
  const std::string text = vm[name].as<std::string>();
  const auto value = names.parse(text);
  if (!value)
    throw UsageError("--" + name + " must be " + names.choices() + ", not '" + text + "'");
  return *value;
}

// Parses "1,2,4,8" (and ranges "1-4") into positive node counts.
std::vector<int> parse_node_list(const std::string& text);

// Options shared by the commands that simulate a scaling study (predict, check-claim): --scaling,
// --target, --network, --solve-quantum, --steps, --warmup, --seed.
void add_study_options(boost::program_options::options_description& options);
models::ScalingStudyOptions parse_study_options(const boost::program_options::variables_map& vm);

// The scenario of --cluster, --model, --job and --set (with the job's and the shipped defaults),
// checked against the node counts to simulate.
using SimulationInputs = models::Scenario;
SimulationInputs load_simulation_inputs(const boost::program_options::variables_map& vm,
                                        const std::vector<int>& nodes);

// Config files to load (empty: the job's, else the shipped default) and settings to apply
// (--set, sweep axes); then the checks that span them for the node counts to simulate, as
// usage errors naming the option to change.
using ConfigFiles = models::ScenarioFiles;
// The shipped configs used when neither the command line nor the job names one.
std::string default_cluster_file();
std::string default_model_file();

// `load_model` (optional) loads a model file with settings, e.g. from a cache.
using models::ModelLoader;
SimulationInputs load_configs(const ConfigFiles& files,
                              const std::vector<models::ConfigOverride>& overrides,
                              const ModelLoader& load_model = {});
void check_simulation_inputs(const SimulationInputs& inputs, const std::vector<int>& nodes);
std::vector<models::ConfigOverride> parse_set_options(
    const boost::program_options::variables_map& vm);

int run_predict(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// What predict and predict --placement share: --repeat and --threads; the draw of a calibrated
// cluster's values within their uncertainty (none without an uncertainty section); the arguments
// that shape a result (not where its outputs go, nor how many threads made it); and the result
// written to --output (with its CSV side file, committed first) or to `out`.
struct RepeatOptions {
  int runs = 1;
  int threads = 0;
};
RepeatOptions parse_repeat_options(const boost::program_options::variables_map& vm);
std::function<models::ClusterSpec(std::uint64_t)> uncertainty_draw(
    const models::ClusterSpec& cluster);
std::vector<std::string> shaping_arguments(const std::vector<std::string>& args);
class AtomicOutputFile;
void commit_result(AtomicOutputFile* output, AtomicOutputFile* meta, std::ostream& out,
                   const std::string& text);
// predict --placement FILE: several jobs on one cluster.
int run_predict_placement(const boost::program_options::variables_map& vm,
                          const std::vector<std::string>& args, std::ostream& out);
int run_collective(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// Reads nccl-tests logs given as LOG, LOG:ALGO or LOG@NxG (calibrate --nccl-tests / --check).
std::vector<models::MeasuredRun> read_measured_runs(const std::vector<std::string>& args,
                                                    const std::string& flag,
                                                    std::vector<std::string>* sources);
// The fit table: per log and size, measured vs predicted time and busbw, with per-log errors.
void write_fit_table(std::ostream& out, const std::vector<models::FitRow>& rows, double min_bytes);
// A fitted value in its display unit ("1.812 us", "12.47 GB/s", "0.8231"); unit "s", "B/s" or "".
std::string display_fitted(double value, const std::string& unit);

int run_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// calibrate --job --measured: the options, and the fit of a measured training run.
void add_job_calibration_options(boost::program_options::options_description& options);
int run_calibrate_job(const boost::program_options::variables_map& vm, std::ostream& out,
                      std::ostream& err);
int run_shard(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_check_claim(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_compare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_describe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
