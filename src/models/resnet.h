#pragma once
// torchvision's ResNet family (v1.5: stride on the 3x3 convolution):
// resnet18/34 (BasicBlock), resnet50/101/152, resnext50_32x4d,
// resnext101_32x8d, wide_resnet50_2 (Bottleneck with groups / base width).
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "models/model.h"

namespace dtbench::models {

struct ResNetConfig {
  bool bottleneck = true;             // Bottleneck (50+) or BasicBlock (18/34)
  std::vector<int64_t> layers;        // blocks per stage
  int64_t groups = 1;                 // ResNeXt cardinality
  int64_t width_per_group = 64;       // 128 for wide_resnet50_2
  int64_t num_classes = 1000;
};

// FSDP units: every residual block (BasicBlock/Bottleneck); the stem and the
// classifier are the root's.
class ResNetImpl : public torch::nn::Module, public UnitSeam {
 public:
  explicit ResNetImpl(const ResNetConfig& cfg);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Sequential make_stage(int64_t planes, int64_t blocks, int64_t stride);

  ResNetConfig cfg_;
  int64_t inplanes_ = 64;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr}, layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

ResNetConfig resnet_config(const std::string& name, int64_t num_classes);

}  // namespace dtbench::models
