#pragma once
// Shared by the files of the ddp_equivalence_test program
// (tests/train/ddp_equivalence_test.cc, ddp_checks_test.cc): the job's
// communicator, which main() builds, and parameter comparisons.
#include <algorithm>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "comm/communicator.h"
#include "models/model.h"

namespace dtbench::testing {

inline std::unique_ptr<comm::Communicator> g_comm;

inline std::vector<torch::Tensor> params_of(models::Model& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.module()->parameters()) out.push_back(p.detach().clone());
  return out;
}

inline double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

// A tensor-parallel region without the group's sums: the plan's cut alone
// (what one process's model is cut with to compare against a rank's part,
// and the negative controls).
inline models::TpRegion without_sums(models::TpRegion r) {
  r.copy_in = r.reduce_out = [](const torch::Tensor& x) { return x; };
  return r;
}

inline bool backend_has_c10d_group() { return static_cast<bool>(g_comm->c10d_group()); }

}  // namespace dtbench::testing
