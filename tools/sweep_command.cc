// `trainsim sweep FILE.yaml`: expands a sweep file into numbered points, predicts each (in
// parallel on all cores with oneTBB, or over MPI ranks) and streams one row per point, in index
// order, to CSV or JSON Lines; a rerun with the same output file skips the points already there.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "engine/parallel.h"
#include "models/config/sweep_config.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/plot_svg.h"
#include "tools/progress.h"
#include "tools/report_format.h"
#include "tools/result_reader.h"
#include "tools/sweep_run.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

po::options_description sweep_options() {
  po::options_description o("options");
  // clang-format off
  o.add_options()
    ("help,h", "show this help")
    ("output,o", po::value<std::string>(),
     "write rows to FILE (CSV, or JSON Lines for .jsonl/.json); an existing FILE from the same "
     "sweep is resumed: its points are skipped")
    ("format", po::value<std::string>(), "csv or jsonl (default: from the output file's "
     "extension, else csv)")
    ("threads", po::value<int>(), "points simulated at once (default: all cores)")
    ("repeat", po::value<int>()->default_value(1),
     "simulate every point N times with seeds --seed, --seed + 1, ... (everything random drawn "
     "afresh, a calibrated cluster's values within their uncertainty) and add the mean and 95% "
     "confidence interval of throughput, speedup, efficiency and step time to each row")
    ("sweep-index", po::value<std::size_t>(), "run only point I")
    ("sweep-range", po::value<std::string>(), "run only points A <= I < B, given as A:B (for "
     "the array jobs of a batch scheduler)")
    ("list", "print the points (index and axis values) without simulating")
    ("merge", po::value<std::vector<std::string>>()->multitoken(),
     "merge outputs of this sweep (the slices of an array job) into --output, each point once, "
     "in index order, without simulating; --output may hold rows already")
    ("plot", po::value<std::string>(), "draw speedup and efficiency against nodes (one line per "
     "combination of the other axes) and the step breakdown as an SVG file");
  // clang-format on
  add_study_options(o);
  return o;
}

std::pair<std::size_t, std::size_t> parse_range(const std::string& text, std::size_t points) {
  const auto colon = text.find(':');
  std::size_t a = 0, b = 0;
  try {
    if (colon == std::string::npos) throw std::invalid_argument("");
    std::size_t used = 0;
    a = std::stoull(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("");
    const std::string rest = text.substr(colon + 1);
    b = std::stoull(rest, &used);
    if (used != rest.size()) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError("--sweep-range: expected A:B (points A <= I < B), got '" + text + "'");
  }
  if (b <= a) throw UsageError("--sweep-range " + text + ": the range is empty");
  if (a >= points) {
    throw UsageError("--sweep-range " + text + ": the sweep has " + std::to_string(points) +
                     " points (0.." + std::to_string(points - 1) + ")");
  }
  return {a, std::min(b, points)};
}

// Points in parallel on this machine's cores; rows written in index order as they complete.
void run_on_this_machine(const SweepJob& job, const std::vector<std::size_t>& todo,
                         SweepOutput& output, std::ostream& err, int threads) {
  Progress progress(err, todo.size(), "points");
  std::vector<std::optional<std::string>> rows(todo.size());
  std::mutex mutex;
  std::size_t next = 0, finished = 0;
  parallel_for_index(todo.size(), threads, [&](std::size_t k) {
    std::string row = render_row(job, evaluate_point(job, todo[k]));
    const std::lock_guard<std::mutex> lock(mutex);
    rows[k] = std::move(row);
    ++finished;
    while (next < rows.size() && rows[next]) {
      output.write(todo[next], *rows[next]);
      rows[next].reset();
      ++next;
    }
    progress.update(finished);
  });
  output.finish();
}

}  // namespace

int run_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const po::options_description options = sweep_options();
  const po::variables_map vm = parse_options(args, options, "sweep", "file");
  if (vm.count("help")) {
    out << "usage: trainsim sweep FILE.yaml [options]\n"
           "       mpirun -np K trainsim sweep FILE.yaml [options]\n\n"
           "Expands the sweep file's axes (config keys, whole files, node counts; a grid or "
           "zipped)\n"
           "into numbered points and predicts each: throughput, speedup and efficiency over the\n"
           "sweep's baseline node count with the other axes unchanged, time-to-quality and the "
           "step\n"
           "breakdown. Points run in parallel on all cores; under mpirun, rank 0 hands points out "
           "to\n"
           "the other ranks. Rows come out in index order, the same for any thread or rank "
           "count.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  if (!vm.count("file")) throw UsageError("sweep: give the sweep file: trainsim sweep FILE.yaml");
  SweepJob job = prepare_sweep(vm);

  if (vm.count("merge")) {
    if (!vm.count("output")) throw UsageError("sweep --merge needs --output FILE");
    const auto& slices = vm["merge"].as<std::vector<std::string>>();
    const std::size_t points = merge_sweep_outputs(job, slices, vm["output"].as<std::string>());
    err << "merged " << slices.size() << " output(s): " << points << " of "
        << job.spec.point_count() << " points in " << vm["output"].as<std::string>() << "\n";
    return kExitOk;
  }
  if (vm.count("list")) {
    for (std::size_t i = 0; i < job.spec.point_count(); ++i) {
      out << i;
      const auto at = job.spec.point(i);
      for (std::size_t a = 0; a < job.spec.axes.size(); ++a) {
        out << "  " << job.spec.axes[a].key << "=" << job.spec.axes[a].values[at[a]];
      }
      out << "\n";
    }
    return kExitOk;
  }

  // Which points: all, one, or a range.
  std::size_t first = 0, last = job.spec.point_count();
  if (vm.count("sweep-index") && vm.count("sweep-range")) {
    throw UsageError("sweep: give --sweep-index or --sweep-range, not both");
  }
  if (vm.count("sweep-index")) {
    first = vm["sweep-index"].as<std::size_t>();
    if (first >= last) {
      throw UsageError("--sweep-index " + std::to_string(first) + ": the sweep has " +
                       std::to_string(last) + " points");
    }
    last = first + 1;
  } else if (vm.count("sweep-range")) {
    std::tie(first, last) = parse_range(vm["sweep-range"].as<std::string>(), last);
  }

  validate_sweep(job);  // bad keys and values: before any output
  // Under mpirun only rank 0 reads and writes files; the others simulate what it sends.
  SweepMpi mpi;
  if (mpi.rank() > 0) {
    mpi.work(job);
    return kExitOk;
  }
  std::unique_ptr<AtomicOutputFile> plot_file;
  if (vm.count("plot"))
    plot_file = std::make_unique<AtomicOutputFile>(vm["plot"].as<std::string>());
  SweepOutput output(job, vm, out);  // checks a resumed file before anything runs
  std::vector<std::size_t> todo;
  for (std::size_t i = first; i < last; ++i) {
    if (!output.done(i)) todo.push_back(i);
  }
  int threads = 0;  // all cores
  if (vm.count("threads")) {
    threads = vm["threads"].as<int>();
    if (threads < 1) throw UsageError("--threads must be at least 1");
  }
  if (mpi.rank() == 0) {
    mpi.coordinate(job, todo, output);
  } else {
    run_on_this_machine(job, todo, output, err, threads);
  }
  if (plot_file) {
    const ResultSet results =
        parse_results(output.text(), output.path().empty() ? "the sweep" : output.path());
    write_scaling_svg(plot_file->stream(), results.series, "sweep " + job.spec.name,
                      job.spec.baseline_nodes);
    plot_file->commit();
  }
  return kExitOk;
}

}  // namespace trainsim::cli
