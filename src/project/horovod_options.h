#pragma once
// Horovod's two knobs as `dtbench project --reducer horovod` takes them
// (horovod_time.h). Torch-free.

namespace dtbench::project {

struct HorovodOptions {
  double cycle_s = 1e-3;                         // HOROVOD_CYCLE_TIME: 1 ms
  double threshold_bytes = 128.0 * 1024 * 1024;  // HOROVOD_FUSION_THRESHOLD: 128 MiB
};

}  // namespace dtbench::project
