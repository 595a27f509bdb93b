#include "train/flops.h"

#include <set>

#include <ATen/record_function.h>
#include <torch/torch.h>

#include "core/error.h"
#include "train/trainer.h"

namespace dtbench::train {
namespace {

std::vector<int64_t> int_list(const c10::IValue& v) { return v.toIntVector(); }

double numel(const at::IntArrayRef& sizes) {
  double n = 1;
  for (auto s : sizes) n *= static_cast<double>(s);
  return n;
}

// Multiply-adds of one op from its inputs; 0 for ops that are not counted.
double op_macs(const std::string& name, c10::ArrayRef<const c10::IValue> in) {
  if (name == "aten::convolution" && in.size() >= 9 && in[0].isTensor() && in[1].isTensor()) {
    const auto x = in[0].toTensor().sizes();   // N, Cin, spatial...
    const auto w = in[1].toTensor().sizes();   // Cout, Cin/groups, kernel...
    if (in[6].toBool()) return 0;              // transposed: not used by dtbench's models
    const auto stride = int_list(in[3]), padding = int_list(in[4]), dilation = int_list(in[5]);
    double out_spatial = 1, kernel = 1;
    for (std::size_t d = 2; d < x.size(); ++d) {
      const std::size_t i = d - 2;
      const int64_t k = w[d];
      const int64_t s = stride[std::min(i, stride.size() - 1)];
      const int64_t p = padding[std::min(i, padding.size() - 1)];
      const int64_t dil = dilation[std::min(i, dilation.size() - 1)];
      const int64_t out = (x[d] + 2 * p - dil * (k - 1) - 1) / s + 1;
      out_spatial *= static_cast<double>(out);
      kernel *= static_cast<double>(k);
    }
    return static_cast<double>(x[0]) * static_cast<double>(w[0]) * out_spatial *
           static_cast<double>(w[1]) * kernel;
  }
  auto mm = [](const at::Tensor& a, const at::Tensor& b) {
    return static_cast<double>(a.size(0)) * static_cast<double>(a.size(1)) * static_cast<double>(b.size(1));
  };
  auto bmm = [](const at::Tensor& a, const at::Tensor& b) {
    return numel(a.sizes()) * static_cast<double>(b.size(2));
  };
  if (name == "aten::mm" && in.size() >= 2) return mm(in[0].toTensor(), in[1].toTensor());
  if (name == "aten::addmm" && in.size() >= 3) return mm(in[1].toTensor(), in[2].toTensor());
  if (name == "aten::bmm" && in.size() >= 2) return bmm(in[0].toTensor(), in[1].toTensor());
  if (name == "aten::baddbmm" && in.size() >= 3) return bmm(in[1].toTensor(), in[2].toTensor());
  return 0;
}

struct Recording {
  std::map<std::string, double> counts;
  std::vector<LayerCost> layers;
  std::set<const void*> params;  // data pointers of the model's parameters
  std::set<const void*> seen;    // those already attributed to a layer
};
thread_local Recording* t_rec = nullptr;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_rec == nullptr) return nullptr;
  const std::string name = fn.name();
  const auto inputs = fn.inputs();
  const double macs = op_macs(name, inputs);
  if (macs <= 0) return nullptr;
  t_rec->counts[name] += macs;
  LayerCost layer{macs, 0};
  // A weight passed transposed (linear's addmm) is a view with the same data pointer.
  for (const auto& v : inputs) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const void* ptr = v.toTensor().data_ptr();
    if (t_rec->params.count(ptr) != 0 && t_rec->seen.insert(ptr).second)
      layer.param_elements += static_cast<double>(v.toTensor().numel());
  }
  t_rec->layers.push_back(layer);
  return nullptr;
}

}  // namespace

ForwardCost measure_forward_cost(const TrainOptions& opts) {
  auto model = make_seeded_model(opts);
  model->module()->eval();
  auto one = opts;
  one.batch_size = 1;
  const auto batch = make_batch(one, model->input_kind(), 1, 0);
  Recording rec;
  double param_elements = 0;
  for (const auto& p : model->module()->parameters()) {
    rec.params.insert(p.data_ptr());
    param_elements += static_cast<double>(p.numel());
  }
  t_rec = &rec;
  auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(on_start).needsInputs(true));
  try {
    torch::NoGradGuard no_grad;
    model->forward(batch.input);
  } catch (...) {
    at::removeCallback(handle);
    t_rec = nullptr;
    throw;
  }
  at::removeCallback(handle);
  t_rec = nullptr;
  ForwardCost cost;
  cost.by_op = rec.counts;
  cost.layers = std::move(rec.layers);
  cost.param_elements = param_elements;
  for (const auto& [name, macs] : rec.counts) cost.macs_per_example += macs;
  return cost;
}

double train_flops_per_example(const TrainOptions& opts) {
  const auto& entry = models::find_model(opts.model);
  if (entry.forward_macs) return 6.0 * entry.forward_macs(model_options(opts), opts.seq_len);
  return measure_forward_cost(opts).train_flops_per_example();
}

}  // namespace dtbench::train
