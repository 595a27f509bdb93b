#include "models/resnet.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>

#include "core/error.h"

namespace dtbench::models {
namespace {

namespace F = torch::nn::functional;

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k)
                               .stride(stride)
                               .padding(k / 2)
                               .groups(groups)
                               .bias(false));
}

// BasicBlock (expansion 1): conv3x3(stride) - bn - relu - conv3x3 - bn (+ shortcut).
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride, torch::nn::Sequential down)
      : conv1_(register_module("conv1", conv(inplanes, planes, 3, stride))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", conv(planes, planes, 3, 1))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(planes))),
        down_(down) {
    if (down_) register_module("downsample", down_);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = F::relu(bn1_(conv1_(x)));
    out = bn2_(conv2_(out));
    out = out + (down_ ? down_->forward(x) : x);
    return F::relu(out);
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Sequential down_;
};
TORCH_MODULE(BasicBlock);

// Bottleneck (expansion 4): conv1x1 - conv3x3(stride, groups) - conv1x1, each
// followed by bn; width = planes * width_per_group / 64 * groups.
class BottleneckImpl : public torch::nn::Module {
 public:
  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, int64_t groups,
                 int64_t width_per_group, torch::nn::Sequential down) {
    const int64_t width = planes * width_per_group / 64 * groups;
    conv1_ = register_module("conv1", conv(inplanes, width, 1, 1));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2_ = register_module("conv2", conv(width, width, 3, stride, groups));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(width));
    conv3_ = register_module("conv3", conv(width, planes * 4, 1, 1));
    bn3_ = register_module("bn3", torch::nn::BatchNorm2d(planes * 4));
    down_ = down;
    if (down_) register_module("downsample", down_);
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = F::relu(bn1_(conv1_(x)));
    out = F::relu(bn2_(conv2_(out)));
    out = bn3_(conv3_(out));
    out = out + (down_ ? down_->forward(x) : x);
    return F::relu(out);
  }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  torch::nn::Sequential down_{nullptr};
};
TORCH_MODULE(Bottleneck);

}  // namespace

ResNetImpl::ResNetImpl(const ResNetConfig& cfg) : cfg_(cfg) {
  DTBENCH_CHECK(cfg.layers.size() == 4, "a ResNet has four stages");
  conv1_ = register_module(
      "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1_ = register_module("layer1", make_stage(64, cfg.layers[0], 1));
  layer2_ = register_module("layer2", make_stage(128, cfg.layers[1], 2));
  layer3_ = register_module("layer3", make_stage(256, cfg.layers[2], 2));
  layer4_ = register_module("layer4", make_stage(512, cfg.layers[3], 2));
  for (auto* stage : {&layer1_, &layer2_, &layer3_, &layer4_})
    for (const auto& block : (*stage)->children()) add_unit(block);
  fc_ = register_module("fc", torch::nn::Linear(512 * (cfg.bottleneck ? 4 : 1), cfg.num_classes));
  // torchvision's initialisation: Kaiming normal (fan_out) for convolutions,
  // BatchNorm weight 1 / bias 0.
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* b = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(b->weight);
      torch::nn::init::zeros_(b->bias);
    }
  }
}

torch::nn::Sequential ResNetImpl::make_stage(int64_t planes, int64_t blocks, int64_t stride) {
  const int64_t expansion = cfg_.bottleneck ? 4 : 1;
  torch::nn::Sequential stage;
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t s = i == 0 ? stride : 1;
    torch::nn::Sequential down{nullptr};
    if (i == 0 && (stride != 1 || inplanes_ != planes * expansion)) {
      down = torch::nn::Sequential(conv(inplanes_, planes * expansion, 1, stride),
                                   torch::nn::BatchNorm2d(planes * expansion));
    }
    if (cfg_.bottleneck) {
      stage->push_back(Bottleneck(inplanes_, planes, s, cfg_.groups, cfg_.width_per_group, down));
    } else {
      stage->push_back(BasicBlock(inplanes_, planes, s, down));
    }
    inplanes_ = planes * expansion;
  }
  return stage;
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  x = F::relu(bn1_(conv1_(x)));
  x = F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
  int unit = 0;
  for (auto* stage : {&layer1_, &layer2_, &layer3_, &layer4_})
    for (auto& block : **stage)
      x = run_unit(unit++, [&block](const torch::Tensor& in) { return block.forward(in); }, x);
  x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1));
  return fc_(torch::flatten(x, 1));
}

ResNetConfig resnet_config(const std::string& name, int64_t num_classes) {
  ResNetConfig c;
  c.num_classes = num_classes;
  if (name == "resnet18") {
    c.bottleneck = false;
    c.layers = {2, 2, 2, 2};
  } else if (name == "resnet34") {
    c.bottleneck = false;
    c.layers = {3, 4, 6, 3};
  } else if (name == "resnet50") {
    c.layers = {3, 4, 6, 3};
  } else if (name == "resnet101") {
    c.layers = {3, 4, 23, 3};
  } else if (name == "resnet152") {
    c.layers = {3, 8, 36, 3};
  } else if (name == "resnext50_32x4d") {
    c.layers = {3, 4, 6, 3};
    c.groups = 32;
    c.width_per_group = 4;
  } else if (name == "resnext101_32x8d") {
    c.layers = {3, 4, 23, 3};
    c.groups = 32;
    c.width_per_group = 8;
  } else if (name == "wide_resnet50_2") {
    c.layers = {3, 4, 6, 3};
    c.width_per_group = 128;
  } else {
    throw UsageError("not a ResNet: " + name);
  }
  return c;
}

}  // namespace dtbench::models
