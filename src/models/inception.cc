#include "models/inception.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/error.h"

namespace dtbench::models {
namespace {

namespace F = torch::nn::functional;
using torch::nn::Conv2dOptions;
using Pair = torch::ExpandingArray<2>;

// Convolution without bias + batch norm (eps 1e-3) + ReLU.
class BasicConvImpl : public torch::nn::Module {
 public:
  BasicConvImpl(int64_t in, int64_t out, Pair kernel, Pair stride = 1, Pair padding = 0)
      : conv_(register_module("conv", torch::nn::Conv2d(Conv2dOptions(in, out, kernel)
                                                            .stride(stride)
                                                            .padding(padding)
                                                            .bias(false)))),
        bn_(register_module("bn", torch::nn::BatchNorm2d(
                                      torch::nn::BatchNormOptions(out).eps(0.001)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::relu(bn_(conv_(x))); }

 private:
  torch::nn::Conv2d conv_;
  torch::nn::BatchNorm2d bn_;
};
TORCH_MODULE(BasicConv);

BasicConv bc(int64_t in, int64_t out, Pair kernel, Pair stride = 1, Pair padding = 0) {
  return BasicConv(std::make_shared<BasicConvImpl>(in, out, kernel, stride, padding));
}

torch::Tensor avg3(const torch::Tensor& x) {
  return F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(1).padding(1));
}
torch::Tensor max3s2(const torch::Tensor& x) {
  return F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2));
}

class InceptionAImpl : public torch::nn::Module {
 public:
  InceptionAImpl(int64_t in, int64_t pool_features) {
    b1_ = register_module("branch1x1", bc(in, 64, 1));
    b5_1_ = register_module("branch5x5_1", bc(in, 48, 1));
    b5_2_ = register_module("branch5x5_2", bc(48, 64, 5, 1, 2));
    b3_1_ = register_module("branch3x3dbl_1", bc(in, 64, 1));
    b3_2_ = register_module("branch3x3dbl_2", bc(64, 96, 3, 1, 1));
    b3_3_ = register_module("branch3x3dbl_3", bc(96, 96, 3, 1, 1));
    pool_ = register_module("branch_pool", bc(in, pool_features, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat({b1_(x), b5_2_(b5_1_(x)), b3_3_(b3_2_(b3_1_(x))), pool_(avg3(x))}, 1);
  }

 private:
  BasicConv b1_{nullptr}, b5_1_{nullptr}, b5_2_{nullptr}, b3_1_{nullptr}, b3_2_{nullptr},
      b3_3_{nullptr}, pool_{nullptr};
};
TORCH_MODULE(InceptionA);

class InceptionBImpl : public torch::nn::Module {
 public:
  explicit InceptionBImpl(int64_t in) {
    b3_ = register_module("branch3x3", bc(in, 384, 3, 2));
    d1_ = register_module("branch3x3dbl_1", bc(in, 64, 1));
    d2_ = register_module("branch3x3dbl_2", bc(64, 96, 3, 1, 1));
    d3_ = register_module("branch3x3dbl_3", bc(96, 96, 3, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat({b3_(x), d3_(d2_(d1_(x))), max3s2(x)}, 1);
  }

 private:
  BasicConv b3_{nullptr}, d1_{nullptr}, d2_{nullptr}, d3_{nullptr};
};
TORCH_MODULE(InceptionB);

class InceptionCImpl : public torch::nn::Module {
 public:
  InceptionCImpl(int64_t in, int64_t c7) {
    b1_ = register_module("branch1x1", bc(in, 192, 1));
    s1_ = register_module("branch7x7_1", bc(in, c7, 1));
    s2_ = register_module("branch7x7_2", bc(c7, c7, {1, 7}, 1, {0, 3}));
    s3_ = register_module("branch7x7_3", bc(c7, 192, {7, 1}, 1, {3, 0}));
    d1_ = register_module("branch7x7dbl_1", bc(in, c7, 1));
    d2_ = register_module("branch7x7dbl_2", bc(c7, c7, {7, 1}, 1, {3, 0}));
    d3_ = register_module("branch7x7dbl_3", bc(c7, c7, {1, 7}, 1, {0, 3}));
    d4_ = register_module("branch7x7dbl_4", bc(c7, c7, {7, 1}, 1, {3, 0}));
    d5_ = register_module("branch7x7dbl_5", bc(c7, 192, {1, 7}, 1, {0, 3}));
    pool_ = register_module("branch_pool", bc(in, 192, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat(
        {b1_(x), s3_(s2_(s1_(x))), d5_(d4_(d3_(d2_(d1_(x))))), pool_(avg3(x))}, 1);
  }

 private:
  BasicConv b1_{nullptr}, s1_{nullptr}, s2_{nullptr}, s3_{nullptr}, d1_{nullptr}, d2_{nullptr},
      d3_{nullptr}, d4_{nullptr}, d5_{nullptr}, pool_{nullptr};
};
TORCH_MODULE(InceptionC);

class InceptionDImpl : public torch::nn::Module {
 public:
  explicit InceptionDImpl(int64_t in) {
    a1_ = register_module("branch3x3_1", bc(in, 192, 1));
    a2_ = register_module("branch3x3_2", bc(192, 320, 3, 2));
    s1_ = register_module("branch7x7x3_1", bc(in, 192, 1));
    s2_ = register_module("branch7x7x3_2", bc(192, 192, {1, 7}, 1, {0, 3}));
    s3_ = register_module("branch7x7x3_3", bc(192, 192, {7, 1}, 1, {3, 0}));
    s4_ = register_module("branch7x7x3_4", bc(192, 192, 3, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::cat({a2_(a1_(x)), s4_(s3_(s2_(s1_(x)))), max3s2(x)}, 1);
  }

 private:
  BasicConv a1_{nullptr}, a2_{nullptr}, s1_{nullptr}, s2_{nullptr}, s3_{nullptr}, s4_{nullptr};
};
TORCH_MODULE(InceptionD);

class InceptionEImpl : public torch::nn::Module {
 public:
  explicit InceptionEImpl(int64_t in) {
    b1_ = register_module("branch1x1", bc(in, 320, 1));
    t1_ = register_module("branch3x3_1", bc(in, 384, 1));
    t2a_ = register_module("branch3x3_2a", bc(384, 384, {1, 3}, 1, {0, 1}));
    t2b_ = register_module("branch3x3_2b", bc(384, 384, {3, 1}, 1, {1, 0}));
    d1_ = register_module("branch3x3dbl_1", bc(in, 448, 1));
    d2_ = register_module("branch3x3dbl_2", bc(448, 384, 3, 1, 1));
    d3a_ = register_module("branch3x3dbl_3a", bc(384, 384, {1, 3}, 1, {0, 1}));
    d3b_ = register_module("branch3x3dbl_3b", bc(384, 384, {3, 1}, 1, {1, 0}));
    pool_ = register_module("branch_pool", bc(in, 192, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto t = t1_(x);
    auto d = d2_(d1_(x));
    return torch::cat({b1_(x), torch::cat({t2a_(t), t2b_(t)}, 1),
                       torch::cat({d3a_(d), d3b_(d)}, 1), pool_(avg3(x))},
                      1);
  }

 private:
  BasicConv b1_{nullptr}, t1_{nullptr}, t2a_{nullptr}, t2b_{nullptr}, d1_{nullptr}, d2_{nullptr},
      d3a_{nullptr}, d3b_{nullptr}, pool_{nullptr};
};
TORCH_MODULE(InceptionE);

class InceptionAuxImpl : public torch::nn::Module {
 public:
  InceptionAuxImpl(int64_t in, int64_t num_classes) {
    conv0_ = register_module("conv0", bc(in, 128, 1));
    conv1_ = register_module("conv1", bc(128, 768, 5));
    fc_ = register_module("fc", torch::nn::Linear(768, num_classes));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = F::avg_pool2d(x, F::AvgPool2dFuncOptions(5).stride(3));
    y = conv1_(conv0_(y));
    y = F::adaptive_avg_pool2d(y, F::AdaptiveAvgPool2dFuncOptions(1));
    return fc_(torch::flatten(y, 1));
  }

 private:
  BasicConv conv0_{nullptr}, conv1_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(InceptionAux);

class Inception3Impl : public torch::nn::Module {
 public:
  explicit Inception3Impl(int64_t num_classes) {
    c1a_ = register_module("Conv2d_1a_3x3", bc(3, 32, 3, 2));
    c2a_ = register_module("Conv2d_2a_3x3", bc(32, 32, 3));
    c2b_ = register_module("Conv2d_2b_3x3", bc(32, 64, 3, 1, 1));
    c3b_ = register_module("Conv2d_3b_1x1", bc(64, 80, 1));
    c4a_ = register_module("Conv2d_4a_3x3", bc(80, 192, 3));
    m5b_ = register_module("Mixed_5b", InceptionA(192, 32));
    m5c_ = register_module("Mixed_5c", InceptionA(256, 64));
    m5d_ = register_module("Mixed_5d", InceptionA(288, 64));
    m6a_ = register_module("Mixed_6a", InceptionB(288));
    m6b_ = register_module("Mixed_6b", InceptionC(768, 128));
    m6c_ = register_module("Mixed_6c", InceptionC(768, 160));
    m6d_ = register_module("Mixed_6d", InceptionC(768, 160));
    m6e_ = register_module("Mixed_6e", InceptionC(768, 192));
    aux_ = register_module("AuxLogits", InceptionAux(768, num_classes));
    m7a_ = register_module("Mixed_7a", InceptionD(768));
    m7b_ = register_module("Mixed_7b", InceptionE(1280));
    m7c_ = register_module("Mixed_7c", InceptionE(2048));
    dropout_ = register_module("dropout", torch::nn::Dropout(0.5));
    fc_ = register_module("fc", torch::nn::Linear(2048, num_classes));
  }

  // Logits, and the aux logits in training mode (undefined otherwise).
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& input) {
    const int64_t min = is_training() ? kInceptionMinTrainImage : kInceptionMinImage;
    if (input.dim() != 4 || input.size(2) < min || input.size(3) < min)
      throw UsageError(fmt::format("inception_v3 needs images of at least {0}x{0} {1}(--image-size)",
                                   min, is_training() ? "to train " : ""));
    auto x = c2b_(c2a_(c1a_(input)));
    x = max3s2(x);
    x = c4a_(c3b_(x));
    x = max3s2(x);
    x = m6e_(m6d_(m6c_(m6b_(m6a_(m5d_(m5c_(m5b_(x))))))));
    torch::Tensor aux;
    if (is_training()) aux = aux_(x);
    x = m7c_(m7b_(m7a_(x)));
    x = F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1));
    x = dropout_(torch::flatten(x, 1));
    return {fc_(x), aux};
  }

 private:
  BasicConv c1a_{nullptr}, c2a_{nullptr}, c2b_{nullptr}, c3b_{nullptr}, c4a_{nullptr};
  InceptionA m5b_{nullptr}, m5c_{nullptr}, m5d_{nullptr};
  InceptionB m6a_{nullptr};
  InceptionC m6b_{nullptr}, m6c_{nullptr}, m6d_{nullptr}, m6e_{nullptr};
  InceptionAux aux_{nullptr};
  InceptionD m7a_{nullptr};
  InceptionE m7b_{nullptr}, m7c_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(Inception3);

class InceptionModel : public Model {
 public:
  explicit InceptionModel(int64_t num_classes) : net_(num_classes) {}
  std::shared_ptr<torch::nn::Module> module() override { return net_.ptr(); }
  torch::Tensor forward(const torch::Tensor& input) override { return net_->forward(input).first; }
  torch::Tensor training_loss(const torch::Tensor& input, const torch::Tensor& target) override {
    auto [logits, aux] = net_->forward(input);
    auto loss = F::cross_entropy(logits, target);
    if (aux.defined()) loss = loss + 0.4 * F::cross_entropy(aux, target);
    return loss;
  }
  InputKind input_kind() const override { return InputKind::kImage; }

 private:
  Inception3 net_;
};

}  // namespace

std::unique_ptr<Model> make_inception_v3(int64_t num_classes) {
  return std::make_unique<InceptionModel>(num_classes);
}

}  // namespace dtbench::models
