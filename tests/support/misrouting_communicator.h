#pragma once
// Communicator wrappers for the collective tests: Forwarding passes every
// call to a real communicator; Misrouting gets routing wrong the way a
// broken backend might. Tests derive from them to break one thing at a time.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "comm/communicator.h"

namespace dtbench::testing {

// The communicator every rank's tests run on (built by main()).
comm::Communicator& test_comm();

// A communicator that gets routing wrong the way a broken backend might:
// chunks swapped (allgather, alltoall), the neighbouring rank's chunk
// (reduce_scatter), from the wrong peer (sendrecv). The check must catch each,
// with chunk sizes that are multiples of 64 elements (where the old periodic
// test data could not tell chunks apart).
class Misrouting : public comm::Communicator {
 public:
  explicit Misrouting(comm::Communicator& c) : c_(c) {}
  std::string backend() const override { return c_.backend(); }
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::chrono::milliseconds timeout() const override { return c_.timeout(); }
  std::string unsupported_reason(comm::Collective k, comm::DType d, comm::ReduceOp o) const override {
    return c_.unsupported_reason(k, d, o);
  }
  comm::WorkPtr allreduce(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    return c_.allreduce(in, out, op);
  }
  comm::WorkPtr broadcast(const at::Tensor& in, at::Tensor& out, int root) override {
    return c_.broadcast(in, out, root);
  }
  comm::WorkPtr reduce(const at::Tensor& in, at::Tensor& out, int root, comm::ReduceOp op) override {
    // Out of place, a non-root's output is overwritten (with its input).
    c_.reduce(in, out, root, op)->wait(timeout());
    if (rank() != root && !in.is_same(out)) out.copy_(in);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr allgather(const at::Tensor& in, at::Tensor& out) override {
    c_.allgather(in, out)->wait(timeout());
    swap_chunks(out);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr reduce_scatter(const at::Tensor& in, at::Tensor& out, comm::ReduceOp op) override {
    // The whole reduction, then the next rank's chunk.
    at::Tensor all = in.clone();
    c_.allreduce(all, all, op)->wait(timeout());
    out.copy_(all.narrow(0, ((rank() + 1) % size()) * out.numel(), out.numel()));
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr alltoall(const at::Tensor& in, at::Tensor& out) override {
    c_.alltoall(in, out)->wait(timeout());
    swap_chunks(out);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr allgatherv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts) override {
    // The parts in rank order rotated by one.
    c_.allgatherv(in, out, counts)->wait(timeout());
    if (!counts.empty() && counts[0] > 0 && counts[0] < out.numel()) out.copy_(at::roll(out, -counts[0]));
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr reduce_scatter_v(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& counts,
                                 comm::ReduceOp op) override {
    // The whole reduction, then this rank's count from the first element
    // (every rank's part at offset 0).
    at::Tensor all = in.clone();
    c_.allreduce(all, all, op)->wait(timeout());
    out.copy_(all.narrow(0, 0, out.numel()));
    (void)counts;
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr send(const at::Tensor& t, int dst, int tag) override { return c_.send(t, dst, tag); }
  comm::WorkPtr recv(at::Tensor& t, int src, int tag) override { return c_.recv(t, src, tag); }
  comm::WorkPtr sendrecv(const at::Tensor& in, at::Tensor& out, int dst, int src) override {
    // Every rank sends to the rank before it instead: each receives from
    // the rank after it.
    (void)dst;
    (void)src;
    return c_.sendrecv(in, out, (rank() + size() - 1) % size(), (rank() + 1) % size());
  }
  comm::WorkPtr gather(const at::Tensor& in, at::Tensor& out, int root) override {
    // Chunks in the wrong order on the root.
    c_.gather(in, out, root)->wait(timeout());
    if (rank() == root) swap_chunks(out);
    return std::make_unique<comm::CompletedWork>();
  }
  comm::WorkPtr scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    // Every rank gets the next rank's chunk: scatter the root's buffer
    // rotated by one chunk.
    at::Tensor rotated = in;
    if (rank() == root && in.numel() > 0) rotated = at::roll(in, -out.numel());
    return c_.scatter(rotated, out, root);
  }
  void barrier() override { c_.barrier(); }
  comm::WorkPtr alltoallv(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>& ins,
                          const std::vector<std::int64_t>& outs) override {
    return c_.alltoallv(in, out, ins, outs);
  }

 protected:
  comm::Communicator& real() const { return c_; }

 private:
  void swap_chunks(at::Tensor& out) const {
    const auto c = out.numel() / size();
    const auto first = out.narrow(0, 0, c).clone();
    out.narrow(0, 0, c).copy_(out.narrow(0, c, c));
    out.narrow(0, c, c).copy_(first);
  }
  comm::Communicator& c_;
};

}  // namespace dtbench::testing
