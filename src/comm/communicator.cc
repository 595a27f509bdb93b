#include "comm/communicator.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "comm/error_text.h"
#include "compat/dtype_compat.h"
#include "compat/torch_version.h"
#include "core/error.h"

namespace dtbench::comm {

c10::intrusive_ptr<c10d::ProcessGroup> Communicator::c10d_group() const { return {}; }

std::string Communicator::composite_reason(Collective) const { return ""; }
std::string Communicator::out_of_place_reason(Collective) const { return ""; }
std::string Communicator::staging_note(Collective, bool) const { return ""; }

WorkPtr Communicator::alltoallv(const at::Tensor&, at::Tensor&, const std::vector<std::int64_t>&,
                                const std::vector<std::int64_t>&) {
  const std::string why = unsupported_reason(Collective::kAlltoallv, DType::kFloat32, ReduceOp::kSum);
  throw UnsupportedError(why.empty() ? backend() + ": alltoallv is not implemented" : why);
}

WorkPtr Communicator::allgatherv(const at::Tensor&, at::Tensor&, const std::vector<std::int64_t>&) {
  const std::string why = unsupported_reason(Collective::kAllgatherv, DType::kFloat32, ReduceOp::kSum);
  throw UnsupportedError(why.empty() ? backend() + ": allgatherv is not implemented" : why);
}

WorkPtr Communicator::reduce_scatter_v(const at::Tensor&, at::Tensor&, const std::vector<std::int64_t>&, ReduceOp) {
  const std::string why = unsupported_reason(Collective::kReduceScatterV, DType::kFloat32, ReduceOp::kSum);
  throw UnsupportedError(why.empty() ? backend() + ": reduce_scatter_v is not implemented" : why);
}

bool Communicator::has_own_reduce_scatter() const {
  return unsupported_reason(Collective::kReduceScatter, DType::kFloat32, ReduceOp::kSum).empty() &&
         composite_reason(Collective::kReduceScatter).empty();
}

std::exception_ptr Communicator::explain_failure(std::exception_ptr error, const std::string& context) const {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return is_peer_failure(e) ? translate(error, context) : error;
  } catch (...) {
    return error;
  }
}

void Work::on_done(std::function<void()> fn) {
  DTBENCH_CHECK(done(), "this work type cannot report its completion before it is done");
  fn();
}

at::ScalarType to_scalar_type(DType t) {
  switch (t) {
    case DType::kFloat32:
      return at::kFloat;
    case DType::kFloat64:
      return at::kDouble;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kBFloat16:
      return at::kBFloat16;
    case DType::kInt32:
      return at::kInt;
    case DType::kInt64:
      return at::kLong;
    case DType::kInt8:
      return at::kChar;
    case DType::kUInt8:
      return at::kByte;
    case DType::kBool:
      return at::kBool;
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
      if (const auto f8 = compat::float8_type(t == DType::kFloat8E4M3)) return *f8;
      throw UnsupportedError(to_string(t) + ": this LibTorch (" + compat::torch_version() +
                             ") has no float8 types (the wheel build's 2.11 has)");
  }
  return at::kFloat;
}

DType from_scalar_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kDouble:
      return DType::kFloat64;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    case at::kInt:
      return DType::kInt32;
    case at::kLong:
      return DType::kInt64;
    case at::kChar:
      return DType::kInt8;
    case at::kByte:
      return DType::kUInt8;
    case at::kBool:
      return DType::kBool;
    default:
      if (t == compat::float8_type(true)) return DType::kFloat8E4M3;
      if (t == compat::float8_type(false)) return DType::kFloat8E5M2;
      throw UnsupportedError(std::string("unsupported tensor dtype ") + c10::toString(t));
  }
}

}  // namespace dtbench::comm
