#pragma once
// Names shared by the CLI, the reports and the communicators: data types,
// reduction ops and collectives. Torch-free, so the CLI and reports can use
// them without LibTorch.
#include <cstddef>
#include <string>
#include <vector>

namespace dtbench::comm {

// kBool: reductions are logical (sum and max: or; prod and min: and), as
// c10d's. kFloat8E4M3/kFloat8E5M2: OCP float8 (e4m3fn, e5m2), on NCCL builds
// only (LibTorch >= 2.1; NCCL itself refuses them on GPUs before sm_89).
enum class DType {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt32,
  kInt64,
  kInt8,
  kUInt8,
  kBool,
  kFloat8E4M3,
  kFloat8E5M2
};
enum class ReduceOp { kSum, kProd, kMin, kMax, kAvg };
enum class Collective {
  kAllreduce,
  kBroadcast,
  kReduce,
  kAllgather,
  kReduceScatter,
  kAlltoall,
  kSendrecv,
  kGather,
  kScatter,
  // Point to point between the 2 ranks of a communicator: rank 0 sends, rank
  // 1 sends it back (PARAM's and OSU's latency test). Not in `--collective
  // all`: it needs a 2-rank communicator (--split pairs ranks).
  kPingpong,
  // Every rank waits until all have arrived (PARAM's barrier): no data; its
  // check is the order of arrivals and departures. Not in `--collective all`.
  kBarrier,
  // alltoall with uneven parts (PARAM's all_to_allv, MoE's token exchange):
  // rank i sends in_splits[j] elements to rank j (--split-sizes).
  kAlltoallv,
  // allgather with uneven parts (MPI_Allgatherv): rank i contributes
  // counts[i] elements, every rank ends with all parts in rank order.
  kAllgatherv,
  // reduce_scatter with uneven parts (MPI_Reduce_scatter): rank i ends with
  // counts[i] elements of the reduction, at the offset of the parts before it.
  kReduceScatterV,
};

std::string to_string(DType t);
std::string to_string(ReduceOp op);
std::string to_string(Collective c);
std::size_t element_size(DType t);

// Parsers: throw UsageError listing the valid names.
DType parse_dtype(const std::string& s);
ReduceOp parse_op(const std::string& s);
Collective parse_collective(const std::string& s);

const std::vector<DType>& all_dtypes();
const std::vector<ReduceOp>& all_ops();
const std::vector<Collective>& all_collectives();

// Whether the type holds integers (int8, uint8, int32, int64).
bool is_integer(DType t);
// Whether the type is one of the float8 types.
bool is_float8(DType t);

// Whether the collective takes a reduction op.
bool is_reduction(Collective c);

// Why `backend` refuses avg of bool (or and and have no average).
std::string bool_avg_reason(const std::string& backend);

// Why `backend` with `size` ranks (not 2) has no pingpong, naming the way
// to pair ranks.
std::string pingpong_ranks_reason(const std::string& backend, int size);

}  // namespace dtbench::comm
