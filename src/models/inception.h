#pragma once
// torchvision's inception_v3 (Inception3 with aux_logits=True,
// transform_input=False): the same module names, parameter shapes and order
// (AuxLogits registered between Mixed_6e and Mixed_7a). In training mode the
// loss is torchvision's reference one: CE(logits) + 0.4 * CE(aux logits).
// Needs images of at least 75x75, and 299x299 in training mode (the aux
// head pools the Mixed_6e map 5x5/3 and then convolves 5x5: it needs 17x17), as torchvision's.
#include <memory>

#include "models/model.h"

namespace dtbench::models {

constexpr int64_t kInceptionMinImage = 75;
constexpr int64_t kInceptionMinTrainImage = 299;

std::unique_ptr<Model> make_inception_v3(int64_t num_classes);

}  // namespace dtbench::models
