#pragma once
// The arrays MXNet's tools/bandwidth/measure.py pushes by default: the
// ImageNet ResNet symbol of example/image-classification/symbols/resnet.py
// (`--network resnet --num-layers N`), keeping, as measure.py's get_shapes
// does, only the arguments whose names hold "weight" or "bias" (the
// convolutions, which have no bias, and the final fully connected layer;
// batch norms' gamma/beta are left out). Pure: shapes only.
//   resnet-152 (measure.py's default): 157 arrays, 240.165536 MB
//   resnet-200: 205 arrays, 257.991328 MB
#include <vector>

#include "bench/kvstore/layout.h"

namespace dtbench::bench::kv {

// The depths the symbol defines for ImageNet-sized inputs.
inline constexpr int kMxnetResnetDepths[] = {18, 34, 50, 101, 152, 200, 269};

// Throws UsageError for a depth the symbol does not define.
std::vector<KvArray> mxnet_resnet_arrays(int num_layers, int num_classes = 1000);

}  // namespace dtbench::bench::kv
