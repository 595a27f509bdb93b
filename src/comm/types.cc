#include "comm/types.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::comm {
namespace {

template <typename E>
struct Named {
  E value;
  const char* name;
};

const Named<DType> kDTypes[] = {{DType::kFloat32, "float32"}, {DType::kFloat64, "float64"},
                                {DType::kFloat16, "float16"}, {DType::kBFloat16, "bfloat16"},
                                {DType::kInt32, "int32"},     {DType::kInt64, "int64"},
                                {DType::kInt8, "int8"},       {DType::kUInt8, "uint8"},
                                {DType::kBool, "bool"},       {DType::kFloat8E4M3, "float8_e4m3"},
                                {DType::kFloat8E5M2, "float8_e5m2"}};
const Named<ReduceOp> kOps[] = {{ReduceOp::kSum, "sum"},
                                {ReduceOp::kProd, "prod"},
                                {ReduceOp::kMin, "min"},
                                {ReduceOp::kMax, "max"},
                                {ReduceOp::kAvg, "avg"}};
const Named<Collective> kCollectives[] = {{Collective::kAllreduce, "allreduce"},
                                          {Collective::kBroadcast, "broadcast"},
                                          {Collective::kReduce, "reduce"},
                                          {Collective::kAllgather, "allgather"},
                                          {Collective::kReduceScatter, "reduce_scatter"},
                                          {Collective::kAlltoall, "alltoall"},
                                          {Collective::kSendrecv, "sendrecv"},
                                          {Collective::kGather, "gather"},
                                          {Collective::kScatter, "scatter"},
                                          {Collective::kPingpong, "pingpong"},
                                          {Collective::kBarrier, "barrier"},
                                          {Collective::kAlltoallv, "alltoallv"},
                                          {Collective::kAllgatherv, "allgatherv"},
                                          {Collective::kReduceScatterV, "reduce_scatter_v"}};

template <typename E, std::size_t N>
std::string name_of(const Named<E> (&table)[N], E v) {
  for (const auto& e : table)
    if (e.value == v) return e.name;
  return "?";
}

template <typename E, std::size_t N>
E parse(const Named<E> (&table)[N], const std::string& s, const char* what) {
  std::string valid;
  for (const auto& e : table) {
    if (s == e.name) return e.value;
    valid += valid.empty() ? e.name : std::string(", ") + e.name;
  }
  // A few common aliases.
  if (std::string(what) == "dtype") {
    if (s == "float" || s == "fp32") return parse(table, "float32", what);
    if (s == "double" || s == "fp64") return parse(table, "float64", what);
    if (s == "half" || s == "fp16") return parse(table, "float16", what);
    if (s == "bf16") return parse(table, "bfloat16", what);
    if (s == "int") return parse(table, "int32", what);
    if (s == "e4m3" || s == "fp8_e4m3" || s == "float8_e4m3fn") return parse(table, "float8_e4m3", what);
    if (s == "e5m2" || s == "fp8_e5m2") return parse(table, "float8_e5m2", what);
  }
  throw UsageError(fmt::format("unknown {} '{}' (valid: {})", what, s, valid));
}

template <typename E, std::size_t N>
std::vector<E> values(const Named<E> (&table)[N]) {
  std::vector<E> out;
  for (const auto& e : table) out.push_back(e.value);
  return out;
}

}  // namespace

std::string to_string(DType t) { return name_of(kDTypes, t); }
std::string to_string(ReduceOp op) { return name_of(kOps, op); }
std::string to_string(Collective c) { return name_of(kCollectives, c); }

std::size_t element_size(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
      return 1;
  }
  return 0;
}

bool is_float8(DType t) { return t == DType::kFloat8E4M3 || t == DType::kFloat8E5M2; }

bool is_integer(DType t) {
  return t == DType::kInt32 || t == DType::kInt64 || t == DType::kInt8 || t == DType::kUInt8;
}

DType parse_dtype(const std::string& s) { return parse(kDTypes, s, "dtype"); }
ReduceOp parse_op(const std::string& s) { return parse(kOps, s, "op"); }
Collective parse_collective(const std::string& s) { return parse(kCollectives, s, "collective"); }

const std::vector<DType>& all_dtypes() {
  static const auto v = values(kDTypes);
  return v;
}
const std::vector<ReduceOp>& all_ops() {
  static const auto v = values(kOps);
  return v;
}
const std::vector<Collective>& all_collectives() {
  static const auto v = values(kCollectives);
  return v;
}

std::string bool_avg_reason(const std::string& backend) {
  return backend + ": avg of bool is not defined (bool's sum and max are or, its prod and min and)";
}

std::string pingpong_ranks_reason(const std::string& backend, int size) {
  return fmt::format("{}: pingpong runs between exactly 2 ranks, not {} (pair the ranks with --split: div:2 pairs "
                     "neighbours, mod:N/2 rank i with i+N/2)",
                     backend, size);
}

bool is_reduction(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduce ||
         c == Collective::kReduceScatter || c == Collective::kReduceScatterV;
}

}  // namespace dtbench::comm
