#pragma once
// One row per collective, in the manner of nccl-tests' per-collective files:
// buffer sizes, this rank's input, the exactly known expected output, the call
// and the bus-bandwidth factor (derived in docs/metrics.md). The driver
// (comm_bench.cc) runs any row the same way; each row lives in its own file.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "bench/comm/vsplit.h"
#include "comm/communicator.h"

namespace dtbench::bench {

struct CollArgs {
  comm::Communicator* comm = nullptr;
  comm::DType dtype = comm::DType::kFloat32;
  comm::ReduceOp op = comm::ReduceOp::kSum;
  int root = 0;
  std::int64_t count = 0;  // elements of the larger buffer (see CollectiveDef)
  int rank = 0;
  int nranks = 1;
  c10::Device device{c10::DeviceType::CPU};  // where buffers and data live
  std::uint64_t seed = 0;  // test data of this run and size (data.h)
  bool in_place = false;   // the placement being run (what `expected` may assume)
  VSplit vsplit;           // alltoallv's parts (its seed resolved: the run's where none was given)
  // alltoallv's part matrix for this count, made once per size (not in the
  // timed loop); null: made from vsplit where needed.
  std::shared_ptr<const std::vector<std::vector<std::int64_t>>> vparts;
  // allgatherv's and reduce_scatter_v's parts (vsplit_counts), likewise.
  std::shared_ptr<const std::vector<std::int64_t>> vcounts;
};

// How the in-place variant places the input.
enum class InPlace {
  kNone,       // no in-place variant
  kSame,       // input and output are one tensor
  kRankChunk,  // input is chunk `rank` of the output (allgather)
};

struct CollectiveDef {
  comm::Collective kind;
  // The count is divided among ranks: a multiple of nranks, each rank's
  // part a multiple of split_align elements (as nccl-tests), and the count
  // column shows the part (nccl-tests' per-rank count).
  bool splits = false;
  InPlace in_place = InPlace::kNone;
  // busbw = algbw * bus_factor(nranks).
  double (*bus_factor)(int nranks) = nullptr;
  std::int64_t (*in_count)(const CollArgs&) = nullptr;
  std::int64_t (*out_count)(const CollArgs&) = nullptr;
  // This rank's input data.
  at::Tensor (*input)(const CollArgs&) = nullptr;
  // What this rank's output must hold afterwards; an undefined tensor where
  // nothing is defined on this rank (reduce in place on non-roots; out of
  // place their output must stay as prepare_buffers left it).
  at::Tensor (*expected)(const CollArgs&) = nullptr;
  comm::WorkPtr (*run)(const CollArgs&, const at::Tensor& in, at::Tensor& out) = nullptr;
  // The row's time is always the first rank's (-a does not apply): where
  // only it times the whole operation (pingpong's initiator, as OSU's).
  bool first_rank_times = false;
};

// Each rank's part of a split buffer is a multiple of this many elements:
// 16 bytes' worth, as nccl-tests 2.19 ((count / nranks) & -(16 / eltSize)).
inline std::uint64_t split_align(comm::DType t) {
  return std::max<std::uint64_t>(1, 16 / comm::element_size(t));
}

const CollectiveDef& allreduce_def();
const CollectiveDef& broadcast_def();
const CollectiveDef& reduce_def();
const CollectiveDef& allgather_def();
const CollectiveDef& reduce_scatter_def();
const CollectiveDef& alltoall_def();
const CollectiveDef& sendrecv_def();
const CollectiveDef& gather_def();
const CollectiveDef& scatter_def();
const CollectiveDef& pingpong_def();
const CollectiveDef& barrier_def();
const CollectiveDef& alltoallv_def();
const CollectiveDef& allgatherv_def();
const CollectiveDef& reduce_scatter_v_def();

// The row for `c`.
const CollectiveDef& collective_def(comm::Collective c);

}  // namespace dtbench::bench
