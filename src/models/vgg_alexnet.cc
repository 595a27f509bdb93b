#include "models/vgg_alexnet.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

namespace dtbench::models {
namespace {

torch::nn::Conv2d padded_conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(pad));
}
torch::nn::ReLU relu() { return torch::nn::ReLU(torch::nn::ReLUOptions(true)); }
torch::nn::MaxPool2d pool(int64_t k, int64_t s) {
  return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(k).stride(s));
}

// VGG "D" configuration: channel counts, 0 = max pool.
const int64_t kVgg16[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};

}  // namespace

VggAlexImpl::VggAlexImpl(bool vgg, int64_t num_classes) : pool_(vgg ? 7 : 6) {
  torch::nn::Sequential f, c;
  int64_t last = 0;
  if (vgg) {
    int64_t in = 3;
    for (int64_t v : kVgg16) {
      if (v == 0) {
        f->push_back(pool(2, 2));
      } else {
        f->push_back(padded_conv(in, v, 3, 1, 1));
        f->push_back(relu());
        in = v;
      }
    }
    last = 512;
    c->push_back(torch::nn::Linear(last * 49, 4096));
    c->push_back(relu());
    c->push_back(torch::nn::Dropout(0.5));
    c->push_back(torch::nn::Linear(4096, 4096));
    c->push_back(relu());
    c->push_back(torch::nn::Dropout(0.5));
    c->push_back(torch::nn::Linear(4096, num_classes));
  } else {
    f->push_back(padded_conv(3, 64, 11, 4, 2));
    f->push_back(relu());
    f->push_back(pool(3, 2));
    f->push_back(padded_conv(64, 192, 5, 1, 2));
    f->push_back(relu());
    f->push_back(pool(3, 2));
    f->push_back(padded_conv(192, 384, 3, 1, 1));
    f->push_back(relu());
    f->push_back(padded_conv(384, 256, 3, 1, 1));
    f->push_back(relu());
    f->push_back(padded_conv(256, 256, 3, 1, 1));
    f->push_back(relu());
    f->push_back(pool(3, 2));
    last = 256;
    c->push_back(torch::nn::Dropout(0.5));
    c->push_back(torch::nn::Linear(last * 36, 4096));
    c->push_back(relu());
    c->push_back(torch::nn::Dropout(0.5));
    c->push_back(torch::nn::Linear(4096, 4096));
    c->push_back(relu());
    c->push_back(torch::nn::Linear(4096, num_classes));
  }
  features_ = register_module("features", f);
  classifier_ = register_module("classifier", c);
}

torch::Tensor VggAlexImpl::forward(torch::Tensor x) {
  namespace F = torch::nn::functional;
  x = features_->forward(x);
  x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(pool_));
  return classifier_->forward(torch::flatten(x, 1));
}

}  // namespace dtbench::models
