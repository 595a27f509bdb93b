#pragma once
// Stand-in for a header Debian's libtorch-dev (1.13) does not ship but
// c10d/reducer.hpp includes. The Reducer only holds this type through
// pointers, so an opaque declaration is enough. CMake adds this directory to
// the include path only when the real header is missing (wheel builds have it).
#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>

namespace torch::distributed::autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace torch::distributed::autograd
