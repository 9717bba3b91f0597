#include "models/config/runtime_config.h"

#include <cmath>
#include <limits>

#include "models/config/config_node.h"

namespace trainsim::models {

namespace {

double bandwidth(MapReader& map, std::string_view key) {
  const auto node = map.optional(key);
  return node ? node->positive_quantity(Dimension::kBandwidth) : 0.0;
}

}  // namespace

StorageSpec parse_storage(const ConfigNode& node) {
  MapReader map(node);
  StorageSpec s;
  s.location = node.location();
  s.read_bytes_per_s_per_node = bandwidth(map, "read_bandwidth_per_node");
  s.write_bytes_per_s_per_node = bandwidth(map, "write_bandwidth_per_node");
  s.shared_read_bytes_per_s = bandwidth(map, "shared_read_bandwidth");
  s.shared_write_bytes_per_s = bandwidth(map, "shared_write_bandwidth");
  if (auto l = map.optional("read_latency")) {
    const double seconds = l->nonnegative_quantity(Dimension::kTime);
    if (seconds > 60.0) l->fail("is longer than a minute");
    s.read_latency = time_from_seconds(seconds);
  }
  map.finish();
  return s;
}

HostSpec parse_host(const ConfigNode& node) {
  MapReader map(node);
  HostSpec h;
  if (auto cores = map.optional("cpu_cores")) {
    h.cpu_cores = static_cast<int>(cores->positive_integer());
  }
  if (auto vendor = map.optional("cpu_vendor")) {
    h.cpu_vendor = vendor->as_enum(cpu_vendor_names());
  }
  map.finish();
  return h;
}

ReliabilitySpec parse_reliability(const ConfigNode& node) {
  MapReader map(node);
  ReliabilitySpec r;
  r.location = node.location();
  r.node_mtbf_seconds = map.required("node_mtbf").positive_quantity(Dimension::kTime);
  if (auto t = map.optional("restart_time")) {
    r.restart_seconds = t->nonnegative_quantity(Dimension::kTime);
  }
  map.finish();
  return r;
}

DatasetSpec parse_dataset(const ConfigNode& node) {
  MapReader map(node);
  DatasetSpec d;
  if (auto b = map.optional("bytes_per_example")) {
    d.bytes_per_example = b->positive_quantity(Dimension::kBytes);
  }
  if (auto e = map.optional("examples")) {
    d.examples = e->as_number();
    if (!(d.examples >= 1)) e->fail("must be at least 1, got '" + e->as_string() + "'");
  }
  map.finish();
  return d;
}

ConvergenceSpec parse_convergence(const ConfigNode& node) {
  MapReader map(node);
  ConvergenceSpec c;
  c.configured = true;
  c.location = node.location();
  if (auto m = map.optional("metric")) c.metric = m->as_string();
  if (auto b = map.optional("critical_batch")) {
    if (b->as_string() == "infinite") {
      c.critical_batch = std::numeric_limits<double>::infinity();
    } else {
      c.critical_batch = b->as_number();
      if (!(c.critical_batch > 0) || std::isinf(c.critical_batch)) {
        b->fail("must be a positive number of examples or 'infinite', got '" + b->as_string() +
                "'");
      }
    }
  }
  const ConfigNode curve = map.required("curve");
  for (const ConfigNode& item : curve.items()) {
    MapReader p(item);
    QualityPoint point;
    point.quality = p.required("quality").as_number();
    const ConfigNode examples = p.required("examples");
    point.min_examples = examples.as_number();
    if (!(point.min_examples > 0)) {
      examples.fail("must be positive, got '" + examples.as_string() + "'");
    }
    p.finish();
    if (!c.curve.empty()) {
      const QualityPoint& last = c.curve.back();
      if (!(point.min_examples > last.min_examples)) {
        examples.fail("examples must grow along the curve (previous point: " +
                      std::to_string(last.min_examples) + ")");
      }
      if (point.quality == last.quality) item.fail("two points with the same quality");
      if (c.curve.size() >= 2 &&
          (point.quality > last.quality) != (last.quality > c.curve[c.curve.size() - 2].quality)) {
        item.fail("quality must rise (or fall) steadily along the curve");
      }
    }
    c.curve.push_back(point);
  }
  if (c.curve.empty()) curve.fail("needs at least one point");
  if (auto t = map.optional("target")) {
    c.target = t->as_number();
    c.target_location = t->location();
  }
  map.finish();
  return c;
}

DataloaderSpec parse_dataloader(const ConfigNode& node) {
  MapReader map(node);
  DataloaderSpec d;
  d.configured = true;
  d.location = node.location();
  if (auto b = map.optional("bytes_per_example")) {
    d.bytes_per_example = b->nonnegative_quantity(Dimension::kBytes);
  }
  if (auto p = map.optional("preprocess_time_per_example")) {
    d.preprocess_seconds_per_example = p->nonnegative_quantity(Dimension::kTime);
    if (d.preprocess_seconds_per_example > 60.0) p->fail("is longer than a minute");
  }
  if (auto j = map.optional("preprocess_jitter")) {
    d.preprocess_jitter = j->as_number();
    if (!(d.preprocess_jitter >= 0 && d.preprocess_jitter <= 0.5)) {
      j->fail("must be a coefficient of variation from 0 to 0.5, got '" + j->as_string() + "'");
    }
  }
  if (auto w = map.optional("workers_per_gpu")) {
    d.workers_per_gpu = static_cast<int>(w->positive_integer());
    if (d.workers_per_gpu > 256) w->fail("at most 256 workers per GPU");
  }
  if (auto p = map.optional("prefetch_batches")) {
    d.prefetch_batches = static_cast<int>(p->positive_integer());
    if (d.prefetch_batches > 1024) p->fail("at most 1024 batches");
  } else {
    d.prefetch_batches = 2 * d.workers_per_gpu;  // PyTorch: prefetch_factor 2 per worker
  }
  map.finish();
  return d;
}

CheckpointSpec parse_checkpoint(const ConfigNode& node) {
  MapReader map(node);
  CheckpointSpec c;
  c.configured = true;
  c.location = node.location();
  if (auto i = map.optional("interval")) {
    if (i->as_string() != "optimal") {
      const double seconds = i->as_quantity(Dimension::kTime);
      if (!(seconds > 0)) {
        i->fail("must be a positive time (e.g. 30 min) or 'optimal', got '" + i->as_string() + "'");
      }
      c.interval_seconds = seconds;
    }
  }
  if (auto m = map.optional("mode")) {
    const std::string mode = m->as_string();
    if (mode == "async") {
      c.async = true;
    } else if (mode != "sync") {
      m->fail("must be sync or async, got '" + mode + "'");
    }
  }
  if (auto b = map.optional("bytes")) c.bytes = b->positive_quantity(Dimension::kBytes);
  map.finish();
  return c;
}

}  // namespace trainsim::models
