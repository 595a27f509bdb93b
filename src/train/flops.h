#pragma once
// Model FLOPs from the shapes the model's layers actually see: one forward
// pass of one example (a fresh copy of the model, eval mode, no grad) with an
// ATen RecordFunction observer that adds up the multiply-adds of every
// convolution and matrix product (aten::convolution, mm, addmm, bmm,
// baddbmm). Element-wise layers (batch norm, activations, pooling, softmax)
// are not counted, as in the published figures (torchvision's "GFLOPS" column,
// fvcore): resnet50 at 224x224 = 4.09 G multiply-adds.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "train/train_options.h"

namespace dtbench::train {

// One counted op of the forward pass, in execution order: its multiply-adds
// and the parameter elements it reads (a convolution's or linear layer's
// weight and bias; 0 for a product of activations such as attention's bmm).
struct LayerCost {
  double macs = 0;
  double param_elements = 0;
};

struct ForwardCost {
  double macs_per_example = 0;            // multiply-adds of one forward pass
  std::map<std::string, double> by_op;    // the same, per ATen op name
  std::vector<LayerCost> layers;          // the counted ops in forward order
  double param_elements = 0;              // all the model's parameters (the layers' and the rest)
  // Training FLOPs of one example: forward + backward ~ 3 forward passes,
  // 2 FLOPs per multiply-add (the usual MFU convention).
  double train_flops_per_example() const { return 6.0 * macs_per_example; }
};

// Counts opts.model at opts' input size (image side, sequence length, ...).
ForwardCost measure_forward_cost(const TrainOptions& opts);

// Training FLOPs of one example of opts.model (6 x forward multiply-adds):
// from the model's shape formula where it has one (ModelEntry::forward_macs:
// the gpt and llama decoders, equal to the measured count, flops test), so
// that a large decoder's row does not first run a whole float32 forward;
// else measured by measure_forward_cost. Of the whole model: a
// tensor-parallel rank does a 1/tp share of it.
double train_flops_per_example(const TrainOptions& opts);


}  // namespace dtbench::train
