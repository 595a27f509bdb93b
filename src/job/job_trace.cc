#include "job/job_trace.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace dtbench::job {
namespace {

struct Dtype {
  const char* name;
  int bytes;
};

// Both spellings the traces use: ScalarType names (record_param_comms'
// "dtype": "Float") and C++ type names (Gloo's and c10d's "Input type":
// "float", "c10::BFloat16", "long int").
const std::map<std::string, Dtype>& dtypes() {
  static const std::map<std::string, Dtype> m = {
      {"float", {"float32", 4}},          {"double", {"float64", 8}},
      {"half", {"float16", 2}},           {"c10::half", {"float16", 2}},
      {"bfloat16", {"bfloat16", 2}},      {"c10::bfloat16", {"bfloat16", 2}},
      {"long", {"int64", 8}},             {"long int", {"int64", 8}},
      {"int64_t", {"int64", 8}},          {"int", {"int32", 4}},
      {"short", {"int16", 2}},            {"short int", {"int16", 2}},
      {"char", {"int8", 1}},              {"signed char", {"int8", 1}},
      {"byte", {"uint8", 1}},             {"unsigned char", {"uint8", 1}},
      {"bool", {"bool", 1}},              {"float8_e4m3fn", {"float8_e4m3fn", 1}},
      {"c10::float8_e4m3fn", {"float8_e4m3fn", 1}}, {"float8_e5m2", {"float8_e5m2", 1}},
      {"c10::float8_e5m2", {"float8_e5m2", 1}},
      // dtbench's own names, as a Collective holds them.
      {"float32", {"float32", 4}},        {"float64", {"float64", 8}},
      {"float16", {"float16", 2}},        {"int64", {"int64", 8}},
      {"int32", {"int32", 4}},            {"int16", {"int16", 2}},
      {"int8", {"int8", 1}},              {"uint8", {"uint8", 1}},
  };
  return m;
}

const Dtype* find_dtype(const std::string& traced) {
  std::string key;
  for (char c : traced) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto it = dtypes().find(key);
  return it == dtypes().end() ? nullptr : &it->second;
}

}  // namespace

int dtype_bytes(const std::string& trace_dtype) {
  const auto* d = find_dtype(trace_dtype);
  return d ? d->bytes : 0;
}

std::string dtype_name(const std::string& trace_dtype) {
  const auto* d = find_dtype(trace_dtype);
  return d ? d->name : "";
}

std::string collective_name(const std::string& traced) {
  std::string s = traced;
  for (const char* prefix : {"c10d::", "gloo:", "nccl:"})
    if (s.rfind(prefix, 0) == 0) s = s.substr(std::char_traits<char>::length(prefix));
  if (s.rfind("ncclDevKernel_", 0) == 0 || s.rfind("ncclKernel_", 0) == 0) {
    // ncclDevKernel_AllReduce_Sum_f32_RING_LL: the word after the prefix.
    s = s.substr(s.find('_') + 1);
    s = s.substr(0, s.find('_'));
  }
  std::string k;
  for (char c : s)
    if (c != '_') k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // c10d's variants of one collective.
  for (const char* suffix : {"coalesced", "base", "intotensor", "tensor"})
    if (k.size() > std::char_traits<char>::length(suffix) &&
        k.compare(k.size() - std::char_traits<char>::length(suffix), std::string::npos, suffix) == 0)
      k.erase(k.size() - std::char_traits<char>::length(suffix));
  if (k.rfind("allgatherinto", 0) == 0) k = "allgather";
  static const std::map<std::string, std::string> names = {
      {"allreduce", "allreduce"},         {"broadcast", "broadcast"},   {"reduce", "reduce"},
      {"allgather", "allgather"},         {"reducescatter", "reduce_scatter"},
      {"alltoall", "alltoall"},           {"alltoallv", "alltoall"},    {"gather", "gather"},
      {"scatter", "scatter"},             {"send", "send"},             {"recv", "recv"},
      {"recvanysource", "recv"},          {"sendrecv", "sendrecv"},     {"barrier", "barrier"},
  };
  const auto it = names.find(k);
  return it == names.end() ? "" : it->second;
}

double bus_factor(const std::string& collective, int n) {
  if (n < 1) return 0;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather" || collective == "reduce_scatter" || collective == "alltoall" ||
      collective == "gather" || collective == "scatter")
    return static_cast<double>(n - 1) / n;
  if (collective == "broadcast" || collective == "reduce" || collective == "send" || collective == "recv" ||
      collective == "sendrecv")
    return 1.0;
  return 0;
}

}  // namespace dtbench::job
