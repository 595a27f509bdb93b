#pragma once
// The communicator: collectives on tensors, one interface for every backend
// (gloo/, mpi/, nccl/). Modelled on c10d's ProcessGroup and Work, narrowed to
// what the benchmarks need. Each call takes an input and an output tensor;
// they may be the same tensor (in place). Shapes:
//   allreduce       out = op over ranks of in            (numel(out) == numel(in))
//   broadcast       out = in of `root`                   (numel(out) == numel(in))
//   reduce          out on `root` = op over ranks of in  (others: out untouched when out of place)
//   allgather       out = concat over ranks of in        (numel(out) == size * numel(in))
//   reduce_scatter  out = chunk `rank` of op over in     (numel(in) == size * numel(out))
//   alltoall        chunk j of out = chunk `rank` of in on rank j (numel divisible by size)
//   sendrecv        sends in to `dst` while receiving out from `src`
//   gather          out on `root` = concat over ranks of in  (numel(out) == size * numel(in);
//                   others: out untouched)
//   scatter         out = chunk `rank` of in on `root`       (numel(in) == size * numel(out);
//                   in is read on the root only)
//   alltoallv, allgatherv, reduce_scatter_v: uneven parts (below)
// Tensors are contiguous and of the same dtype. Calls return a Work handle;
// every rank must issue the same collectives in the same order.
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include "comm/types.h"

namespace c10d {
class ProcessGroup;
}

namespace dtbench::comm {

// An operation in flight. wait() never blocks past its timeout.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation completes or `timeout` passes. Throws
  // TimeoutError on timeout and CommError when the operation failed.
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  // True once the operation finished, successfully or not. Never blocks.
  virtual bool done() = 0;
  // The failure, once done() and failed; nullptr otherwise.
  virtual std::exception_ptr error() = 0;
  // Runs `fn` once the operation has completed (successfully or not): on the
  // thread that completes it, or at once when it already has. For timelines
  // (--trace) that must see when a collective finished, not when someone
  // waited for it. This default serves works that are complete when returned.
  virtual void on_done(std::function<void()> fn);
};
using WorkPtr = std::unique_ptr<Work>;

// A Work that already finished (blocking backends, local copies).
class CompletedWork : public Work {
 public:
  explicit CompletedWork(std::exception_ptr error = nullptr) : error_(std::move(error)) {}
  void wait(std::chrono::milliseconds) override {
    if (error_) std::rethrow_exception(error_);
  }
  bool done() override { return true; }
  std::exception_ptr error() override { return error_; }

 private:
  std::exception_ptr error_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual std::string backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Timeout applied by barrier() and by wait_all helpers.
  virtual std::chrono::milliseconds timeout() const = 0;

  // "" when the backend can run `c` on `dtype` with `op`, else the reason,
  // e.g. "gloo: reduce_scatter is not implemented by ProcessGroupGloo".
  virtual std::string unsupported_reason(Collective c, DType dtype, ReduceOp op) const = 0;
  // "" when `c` is the backend's own; else why it is made of other
  // collectives at no saving (Gloo 2.x's reduce_scatter: allreduces of the
  // input's chunks), so that a strategy uses the cheaper one it is made of.
  virtual std::string composite_reason(Collective c) const;
  // "" when the backend has an out-of-place form of `c` (input and output
  // buffers apart, one call); else why not: c10d's allreduce, broadcast and
  // reduce work in place, so an out-of-place call here copies the input
  // first, and a benchmark timing it would time the copy too.
  virtual std::string out_of_place_reason(Collective c) const;
  // "" when `c` moves buffers where they are; else how they move otherwise
  // (gloo stages device buffers of sendrecv, reduce_scatter and alltoall
  // through host memory).
  virtual std::string staging_note(Collective c, bool device_buffers) const;
  // Whether the backend has a float32 sum reduce_scatter of its own (neither
  // unsupported nor composite): else the sharded strategies allreduce and
  // keep their shard.
  bool has_own_reduce_scatter() const;

  virtual WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, ReduceOp op) = 0;
  virtual WorkPtr broadcast(const at::Tensor& in, at::Tensor& out, int root) = 0;
  virtual WorkPtr reduce(const at::Tensor& in, at::Tensor& out, int root, ReduceOp op) = 0;
  virtual WorkPtr allgather(const at::Tensor& in, at::Tensor& out) = 0;
  virtual WorkPtr reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) = 0;
  virtual WorkPtr alltoall(const at::Tensor& in, at::Tensor& out) = 0;
  // alltoall with uneven parts: in_splits[j] elements of `in` (in order) go
  // to rank j, out_splits[i] elements from rank i land in `out` (in order).
  // This default throws UnsupportedError (unsupported_reason says why).
  virtual WorkPtr alltoallv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& in_splits,
                            const std::vector<std::int64_t>& out_splits);
  // allgather with uneven parts: rank i contributes counts[i] elements (`in`
  // holds counts[rank]); `out` (the counts' sum) ends with every part in rank
  // order. This default throws UnsupportedError.
  virtual WorkPtr allgatherv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts);
  // reduce_scatter with uneven parts: `in` holds the counts' sum on every
  // rank; `out` (counts[rank] elements) ends with the op over ranks of
  // in[sum(counts[<rank]) .. +counts[rank]). This default throws UnsupportedError.
  virtual WorkPtr reduce_scatter_v(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts,
                                   ReduceOp op);
  virtual WorkPtr send(const at::Tensor& t, int dst, int tag) = 0;
  virtual WorkPtr recv(at::Tensor& t, int src, int tag) = 0;
  virtual WorkPtr sendrecv(const at::Tensor& in, at::Tensor& out, int dst, int src) = 0;
  virtual WorkPtr gather(const at::Tensor& in, at::Tensor& out, int root) = 0;
  virtual WorkPtr scatter(const at::Tensor& in, at::Tensor& out, int root) = 0;
  // All ranks reach this point, or TimeoutError/CommError.
  virtual void barrier() = 0;

  // The c10d process group behind this communicator, for engines that take
  // one (c10d::Reducer); nullptr for backends without one (mpi).
  virtual c10::intrusive_ptr<c10d::ProcessGroup> c10d_group() const;

  // For errors raised by engines that drive this backend themselves (the
  // c10d::Reducer through c10d_group()): a peer failure (timeout, connection
  // closed or reset) becomes TimeoutError/CommError prefixed by `context`,
  // with the cause a launcher published where one is known ("rank 2 (pid
  // 812) is stopped by signal 19 ... on node 0"), as this communicator's
  // own collectives report it. Any other error is returned unchanged.
  virtual std::exception_ptr explain_failure(std::exception_ptr error, const std::string& context) const;
};

// Converts between dtbench's torch-free DType and ATen's.
at::ScalarType to_scalar_type(DType t);
DType from_scalar_type(at::ScalarType t);

}  // namespace dtbench::comm
