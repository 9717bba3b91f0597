#include "models/spec/study_spec.h"

namespace trainsim::models {

const EnumNames<NetworkModel>& network_model_names() {
  static const EnumNames<NetworkModel> names = {{NetworkModel::kFlow, "flow"},
                                                {NetworkModel::kAnalytic, "analytic"}};
  return names;
}

const EnumNames<ScalingMode>& scaling_mode_names() {
  static const EnumNames<ScalingMode> names = {
      {ScalingMode::kJob, "job"}, {ScalingMode::kStrong, "strong"}, {ScalingMode::kWeak, "weak"}};
  return names;
}

}  // namespace trainsim::models
