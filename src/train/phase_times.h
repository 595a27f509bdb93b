#pragma once
// Seconds per timed iteration, one entry per iteration and phase. Torch-free.
#include <vector>

namespace dtbench::train {

struct PhaseTimes {
  std::vector<double> forward, backward, comm_wait, optimizer, total;
};

}  // namespace dtbench::train
