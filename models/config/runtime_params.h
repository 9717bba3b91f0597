// The keys of the sections beyond the training step, for the table of the file that holds them:
// a cluster's storage, host and reliability; a model's dataset and convergence; a job's
// dataloader and checkpoint. `part` returns the section's struct in the file's spec,
// `[](auto& s) -> auto& { return s.storage; }`.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "models/config/param_table.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/runtime_spec.h"

namespace trainsim::models {

inline constexpr WriteUnit kGigabytesPerSecond{1e9, "GB/s"};
inline constexpr WriteUnit kMicroseconds{1e-6, "us"};
inline constexpr WriteUnit kSecondsUnit{1.0, "s"};
inline constexpr WriteUnit kBytesUnit{1.0, "B"};

// A section whose presence the spec records (`configured`, `location`); written when present.
template <class Spec, class F>
Param<Spec> configured_section(ParamDoc doc, F part) {
  Param<Spec> section = Params<Spec>::section(std::move(doc));
  section.read = [part](const ConfigNode& n, Spec& s) {
    part(s).configured = true;
    part(s).location = n.location();
  };
  section.written = [part](const Spec& s) { return part(s).configured; };
  return section;
}

// name (required) and description, which every file has.
template <class Spec>
std::vector<Param<Spec>> name_params(const char* what) {
  using P = Params<Spec>;
  Param<Spec> name = P::text({.key = "name", .help = std::string("the ") + what + "'s name"},
                             [](auto& s) -> auto& { return s.name; });
  name.required = true;
  return {name, P::text({.key = "description", .default_text = "none", .help = "one line for people"},
                        [](auto& s) -> auto& { return s.description; })};
}

// Reads convergence.curve: points with examples growing and quality moving one way.
void read_quality_curve(const ConfigNode& node, std::vector<QualityPoint>& curve);

template <class Spec, class F>
std::vector<Param<Spec>> storage_params(F part) {
  using P = Params<Spec>;
  std::vector<Param<Spec>> out;
  Param<Spec> section = P::section(
      {.key = "storage", .help = "storage the dataloader reads and checkpoints write"});
  section.read = [part](const ConfigNode& n, Spec& s) { part(s).location = n.location(); };
  section.written = [part](const Spec& s) {
    const StorageSpec& st = part(s);
    return st.read_bytes_per_s_per_node > 0 || st.write_bytes_per_s_per_node > 0 ||
           st.shared_read_bytes_per_s > 0 || st.shared_write_bytes_per_s > 0;
  };
  out.push_back(section);
  out.push_back(P::quantity({.key = "storage.read_bandwidth_per_node", .default_text = "unlimited",
                             .help = "each node's read bandwidth from storage"},
                            Dimension::kBandwidth, kGigabytesPerSecond,
                            [part](auto& s) -> auto& { return part(s).read_bytes_per_s_per_node; }));
  out.push_back(P::quantity(
      {.key = "storage.write_bandwidth_per_node", .default_text = "none (no checkpoints)",
       .help = "each node's write bandwidth to storage; checkpoints need it"},
      Dimension::kBandwidth, kGigabytesPerSecond,
      [part](auto& s) -> auto& { return part(s).write_bytes_per_s_per_node; }));
  out.push_back(P::quantity({.key = "storage.shared_read_bandwidth", .default_text = "unlimited",
                             .help = "aggregate read limit of a shared filesystem, split equally "
                                     "among the nodes"},
                            Dimension::kBandwidth, kGigabytesPerSecond,
                            [part](auto& s) -> auto& { return part(s).shared_read_bytes_per_s; }));
  out.push_back(P::quantity({.key = "storage.shared_write_bandwidth", .default_text = "unlimited",
                             .help = "aggregate write limit of a shared filesystem, split equally "
                                     "among the nodes"},
                            Dimension::kBandwidth, kGigabytesPerSecond,
                            [part](auto& s) -> auto& { return part(s).shared_write_bytes_per_s; }));
  out.push_back(P::time({.key = "storage.read_latency", .range = "0 to 1 min",
                         .help = "latency of each read request"},
                        kMicroseconds, [part](auto& s) -> auto& { return part(s).read_latency; },
                        true, 60.0));
  return out;
}

template <class Spec, class F>
std::vector<Param<Spec>> host_params(F part) {
  using P = Params<Spec>;
  return {
      P::section({.key = "host", .help = "the nodes' host CPUs"}),
      P::whole({.key = "host.cpu_cores", .default_text = "a core per dataloader worker",
                .help = "CPU cores per node for dataloader workers"},
               [part](auto& s) -> auto& { return part(s).cpu_cores; }),
      P::choice({.key = "host.cpu_vendor",
                 .help = "NCCL's tuner reads it (network overhead, low-latency bandwidth caps)"},
                cpu_vendor_names(), [part](auto& s) -> auto& { return part(s).cpu_vendor; }),
      P::quantity({.key = "host.memory", .default_text = "unset (not checked)",
                   .help = "system memory per node: tables kept in host memory "
                           "(job sharding.storage) must fit in it"},
                  Dimension::kBytes, WriteUnit{1e12, "TB"},
                  [part](auto& s) -> auto& { return part(s).memory_bytes; }),
  };
}

template <class Spec, class F>
std::vector<Param<Spec>> reliability_params(F part) {
  using P = Params<Spec>;
  Param<Spec> section =
      P::section({.key = "reliability", .help = "failures, for checkpoints"});
  section.read = [part](const ConfigNode& n, Spec& s) { part(s).location = n.location(); };
  section.written = [part](const Spec& s) { return part(s).node_mtbf_seconds > 0; };
  Param<Spec> mtbf = P::quantity(
      {.key = "reliability.node_mtbf",
       .help = "mean time between failures of one node; cluster MTBF = node MTBF / nodes"},
      Dimension::kTime, WriteUnit{3600.0, "h"},
      [part](auto& s) -> auto& { return part(s).node_mtbf_seconds; });
  mtbf.required = true;
  return {section, mtbf,
          P::quantity({.key = "reliability.restart_time",
                       .help = "after a failure, until the job reads its checkpoint back"},
                      Dimension::kTime, WriteUnit{60.0, "min"},
                      [part](auto& s) -> auto& { return part(s).restart_seconds; }, false)};
}

template <class Spec, class F>
std::vector<Param<Spec>> dataset_params(F part) {
  using P = Params<Spec>;
  return {
      P::section({.key = "dataset", .help = "the training data"}),
      P::quantity({.key = "dataset.bytes_per_example", .default_text = "the model's input bytes",
                   .help = "bytes per example on storage"},
                  Dimension::kBytes, kBytesUnit,
                  [part](auto& s) -> auto& { return part(s).bytes_per_example; }),
      P::number({.key = "dataset.examples", .default_text = "unset",
                 .help = "examples in one epoch (the time-to-quality target without convergence)"},
                [part](auto& s) -> auto& { return part(s).examples; }, "at least 1",
                [](double v) { return v >= 1; }, true),
  };
}

template <class Spec, class F>
std::vector<Param<Spec>> convergence_params(F part) {
  using P = Params<Spec>;
  Param<Spec> section = configured_section<Spec>(
      {.key = "convergence",
       .help = "examples needed to reach each quality (without it the batch does not "
               "change convergence)"}, part);
  Param<Spec> critical = P::custom(
      {.key = "convergence.critical_batch", .type = "number or infinite", .range = "> 0",
       .default_text = "infinite",
       .help = "B_noise in examples: E = E_min (1 + B / B_noise) examples reach the target at "
               "global batch B",
       .source = "McCandlish et al., An Empirical Model of Large-Batch Training (2018)"},
      [part](const ConfigNode& n, Spec& s) {
        double& b = part(s).critical_batch;
        if (n.as_string() == "infinite") {
          b = std::numeric_limits<double>::infinity();
          return;
        }
        b = n.as_number();
        if (!(b > 0) || std::isinf(b)) {
          n.fail("must be a positive number of examples or 'infinite', got '" + n.as_string() +
                 "'");
        }
      },
      [part](const Spec& s) -> std::optional<YAML::Node> {
        const double b = part(s).critical_batch;
        return yaml_text(std::isinf(b) ? std::string("infinite") : format_plain(b));
      });
  Param<Spec> curve = P::custom(
      {.key = "convergence.curve", .type = "list of {quality, examples}",
       .help = "E_min for each quality at a small batch, examples growing and quality rising (or "
               "falling, for a loss) steadily; interpolated log-linearly"},
      [part](const ConfigNode& n, Spec& s) { read_quality_curve(n, part(s).curve); },
      [part](const Spec& s) -> std::optional<YAML::Node> {
        YAML::Node list(YAML::NodeType::Sequence);
        for (const QualityPoint& q : part(s).curve) {
          YAML::Node point(YAML::NodeType::Map);
          point.SetStyle(YAML::EmitterStyle::Flow);
          point["quality"] = yaml_text(format_plain(q.quality));
          point["examples"] = yaml_text(format_plain(q.min_examples));
          list.push_back(point);
        }
        return list;
      });
  curve.required = true;
  return {
      section,
      P::text({.key = "convergence.metric", .help = "name of the quality measure (AUC, loss, ...)"},
              [part](auto& s) -> auto& { return part(s).metric; }),
      critical,
      curve,
      P::item({.key = "convergence.curve[].quality", .type = "number", .default_text = "required",
               .help = "a quality"}),
      P::item({.key = "convergence.curve[].examples", .type = "number", .range = "> 0",
               .default_text = "required",
               .help = "examples to reach it at a small batch (E_min)"}),
      P::custom({.key = "convergence.target", .type = "number", .default_text = "the last point's",
                 .help = "default target quality; beyond the last point it cannot be reached"},
                [part](const ConfigNode& n, Spec& s) {
                  part(s).target = n.as_number();
                  part(s).target_location = n.location();
                },
                [part](const Spec& s) -> std::optional<YAML::Node> {
                  if (!part(s).target) return std::nullopt;
                  return yaml_text(format_plain(*part(s).target));
                }),
  };
}

template <class Spec, class F>
std::vector<Param<Spec>> dataloader_params(F part) {
  using P = Params<Spec>;
  Param<Spec> section = configured_section<Spec>(
      {.key = "dataloader", .help = "the input pipeline (without it inputs never stall)"}, part);
  Param<Spec> prefetch = P::whole(
      {.key = "dataloader.prefetch_batches", .default_text = "2 per worker",
       .help = "batches a GPU requests ahead, ready or being prepared",
       .source = "PyTorch DataLoader: prefetch_factor 2 per worker"},
      [part](auto& s) -> auto& { return part(s).prefetch_batches; }, 1, 1024);
  prefetch.absent = [part](MapReader&, Spec& s) {
    part(s).prefetch_batches = 2 * part(s).workers_per_gpu;
  };
  return {
      section,
      P::whole({.key = "dataloader.workers_per_gpu",
                .help = "dataloader worker processes per GPU; each reads its whole batch, then "
                        "preprocesses it on one core"},
               [part](auto& s) -> auto& { return part(s).workers_per_gpu; }, 1, 256),
      prefetch,
      P::checked(
          P::quantity({.key = "dataloader.preprocess_time_per_example", .range = "0 to 1 min",
                       .help = "CPU time to turn one example into tensors, on one core"},
                      Dimension::kTime, kMicroseconds,
                      [part](auto& s) -> auto& { return part(s).preprocess_seconds_per_example; },
                      false),
          [part](const ConfigNode& n, const Spec& s) {
            if (part(s).preprocess_seconds_per_example > 60.0) n.fail("is longer than a minute");
          }),
      P::number({.key = "dataloader.preprocess_jitter",
                 .help = "how much batches differ in preprocessing time: coefficient of "
                         "variation, drawn from --seed"},
                [part](auto& s) -> auto& { return part(s).preprocess_jitter; },
                "a coefficient of variation from 0 to 0.5",
                [](double v) { return v >= 0 && v <= 0.5; }),
      P::quantity({.key = "dataloader.bytes_per_example",
                   .default_text = "the model's dataset.bytes_per_example, else its input bytes",
                   .help = "bytes read from storage per example"},
                  Dimension::kBytes, kBytesUnit,
                  [part](auto& s) -> auto& { return part(s).bytes_per_example; }, false),
  };
}

template <class Spec, class F>
std::vector<Param<Spec>> checkpoint_params(F part) {
  using P = Params<Spec>;
  Param<Spec> section = configured_section<Spec>(
      {.key = "checkpoint", .help = "periodic checkpoints"}, part);
  return {
      section,
      P::custom({.key = "checkpoint.mode", .type = "name", .range = "sync or async",
                 .default_text = "sync",
                 .help = "sync: training pauses for the copy to host and the write; async: for "
                         "the copy only (the write must end before the next checkpoint, and a "
                         "failure during it loses the previous interval too)"},
                [part](const ConfigNode& n, Spec& s) {
                  const std::string mode = n.as_string();
                  if (mode != "sync" && mode != "async") {
                    n.fail("must be sync or async, got '" + mode + "'");
                  }
                  part(s).async = mode == "async";
                },
                [part](const Spec& s) -> std::optional<YAML::Node> {
                  return yaml_text(part(s).async ? "async" : "sync");
                }),
      P::custom({.key = "checkpoint.interval", .type = "time (s) or optimal", .range = "> 0",
                 .default_text = "optimal",
                 .help = "training time between checkpoints; optimal: Daly's optimum for the "
                         "cluster MTBF",
                 .source = "Daly, A higher order estimate of the optimum checkpoint interval "
                           "(2006)"},
                [part](const ConfigNode& n, Spec& s) {
                  if (n.as_string() == "optimal") {
                    part(s).interval_seconds.reset();
                    return;
                  }
                  const double seconds = n.as_quantity(Dimension::kTime);
                  if (!(seconds > 0)) {
                    n.fail("must be a positive time (e.g. 30 min) or 'optimal', got '" +
                           n.as_string() + "'");
                  }
                  part(s).interval_seconds = seconds;
                },
                [part](const Spec& s) -> std::optional<YAML::Node> {
                  const auto& i = part(s).interval_seconds;
                  return yaml_text(i ? format_quantity(*i, kSecondsUnit) : "optimal");
                }),
      P::quantity({.key = "checkpoint.bytes",
                   .default_text = "parameters and optimizer state (dense: 3 x parameter_bytes)",
                   .help = "checkpoint size"},
                  Dimension::kBytes, kBytesUnit,
                  [part](auto& s) -> auto& { return part(s).bytes; }),
  };
}

}  // namespace trainsim::models
