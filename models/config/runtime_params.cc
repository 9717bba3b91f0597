#include "models/config/runtime_params.h"

namespace trainsim::models {

void read_quality_curve(const ConfigNode& node, std::vector<QualityPoint>& curve) {
  curve.clear();
  for (const ConfigNode& item : node.items()) {
    MapReader p(item);
    QualityPoint point;
    point.quality = p.required("quality").as_number();
    const ConfigNode examples = p.required("examples");
    point.min_examples = examples.as_number();
    if (!(point.min_examples > 0)) {
      examples.fail("must be positive, got '" + examples.as_string() + "'");
    }
    p.finish();
    if (!curve.empty()) {
      const QualityPoint& last = curve.back();
      if (!(point.min_examples > last.min_examples)) {
        examples.fail("examples must grow along the curve (previous point: " +
                      std::to_string(last.min_examples) + ")");
      }
      if (point.quality == last.quality) item.fail("two points with the same quality");
      if (curve.size() >= 2 &&
          (point.quality > last.quality) != (last.quality > curve[curve.size() - 2].quality)) {
        item.fail("quality must rise (or fall) steadily along the curve");
      }
    }
    curve.push_back(point);
  }
  if (curve.empty()) node.fail("needs at least one point");
}

}  // namespace trainsim::models
