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

// A tiny decoder for the layout tests: `layers` blocks, width 32, 4 heads
// (Llama's over 2 key/value heads), 40 tokens of vocabulary, 8 positions,
// batch `batch` per replica; 3 iterations of momentum SGD on one thread.
inline train::TrainOptions tiny_decoder_options(const std::string& model, int layers, int batch) {
  train::TrainOptions o;
  o.model = model;
  o.layers = layers;
  o.width = 32;
  o.heads = 4;
  o.kv_heads = 2;
  o.vocab = 40;
  o.seq_len = 8;
  o.batch_size = batch;
  o.iters = 3;
  o.warmup = 0;
  o.threads = 1;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.seed = 11;
  return o;
}

}  // namespace dtbench::testing
