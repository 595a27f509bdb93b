#include "bench/kvstore/mxnet_resnet.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace dtbench::bench::kv {

std::vector<KvArray> mxnet_resnet_arrays(int num_layers, int num_classes) {
  std::vector<int> units;
  switch (num_layers) {
    case 18: units = {2, 2, 2, 2}; break;
    case 34: units = {3, 4, 6, 3}; break;
    case 50: units = {3, 4, 6, 3}; break;
    case 101: units = {3, 4, 23, 3}; break;
    case 152: units = {3, 8, 36, 3}; break;
    case 200: units = {3, 24, 36, 3}; break;
    case 269: units = {3, 30, 48, 8}; break;
    default:
      throw UsageError(fmt::format("--num-layers {}: MXNet's ImageNet resnet symbol has {}", num_layers,
                                   fmt::join(kMxnetResnetDepths, ", ")));
  }
  if (num_classes < 1) throw UsageError(fmt::format("--num-classes {} must be at least 1", num_classes));
  const bool bottleneck = num_layers >= 50;
  const std::vector<std::size_t> filters =
      bottleneck ? std::vector<std::size_t>{64, 256, 512, 1024, 2048} : std::vector<std::size_t>{64, 64, 128, 256, 512};
  std::vector<KvArray> out;
  out.push_back({"conv0_weight", filters[0] * 3 * 7 * 7});
  std::size_t in = filters[0];
  for (std::size_t s = 0; s < units.size(); ++s) {
    const std::size_t f = filters[s + 1];
    for (int u = 0; u < units[s]; ++u) {
      const std::string name = fmt::format("stage{}_unit{}", s + 1, u + 1);
      if (bottleneck) {
        const std::size_t mid = f / 4;
        out.push_back({name + "_conv1_weight", mid * in});
        out.push_back({name + "_conv2_weight", mid * mid * 9});
        out.push_back({name + "_conv3_weight", f * mid});
      } else {
        out.push_back({name + "_conv1_weight", f * in * 9});
        out.push_back({name + "_conv2_weight", f * f * 9});
      }
      if (u == 0) out.push_back({name + "_sc_weight", f * in});  // the first unit: dim_match=False
      in = f;
    }
  }
  out.push_back({"fc1_weight", static_cast<std::size_t>(num_classes) * in});
  out.push_back({"fc1_bias", static_cast<std::size_t>(num_classes)});
  return out;
}

}  // namespace dtbench::bench::kv
