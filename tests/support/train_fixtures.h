#pragma once
// Training options shared by the per-rank training tests: a small MLP that
// trains in milliseconds, with several gradient buckets.
#include <string>

#include "train/train_options.h"

namespace dtbench::testing {

inline train::TrainOptions small_mlp_options(const std::string& reducer) {
  train::TrainOptions o;
  o.model = "mlp";
  o.width = 64;
  o.num_classes = 10;
  o.batch_size = 4;
  o.iters = 3;
  o.warmup = 0;
  o.threads = 1;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.seed = 7;
  o.reducer = reducer;
  o.bucket_cap_mb = 0.05;  // several buckets even for this small model
  o.first_bucket_cap_mb = 0.01;
  if (reducer == "horovod") o.fusion_threshold_mb = 0.02;  // several fused groups
  return o;
}

}  // namespace dtbench::testing
