#pragma once
// Gradient compression of dtbench's own reducers (Horovod's --fp16-allreduce):
// each bucket is cast to float16 or bfloat16 for the allreduce and back.
// Torch-free: what a run reports about it.
#include <cstdint>
#include <string>

namespace dtbench::train {

struct CompressionStats {
  std::string dtype = "none";  // none, fp16, bf16
  // Buckets whose compressed float16 sum overflowed and were reduced again
  // in float32 (the step stays exact; the scale is lowered).
  std::int64_t overflows = 0;
  // Range of the per-bucket power-of-two scales used for float16.
  double min_scale = 1, max_scale = 1;
  // Measured on an extra untimed iteration that reduced every bucket both
  // compressed and in float32: the averaged gradient (the update the
  // optimizer applies) compressed vs exact.
  bool measured = false;
  double max_abs_error = 0;  // max |compressed - exact|
  double max_abs_exact = 0;  // max |exact|
  double sum_sq_error = 0, sum_sq_exact = 0;

  // max |c - e| / max |e| (0 when nothing was measured or e is all zero).
  double max_rel_error() const { return max_abs_exact > 0 ? max_abs_error / max_abs_exact : 0; }
  // ||c - e||_2 / ||e||_2.
  double rel_l2_error() const;
};

}  // namespace dtbench::train
