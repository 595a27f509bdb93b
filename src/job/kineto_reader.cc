#include "job/kineto_reader.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.h"

namespace dtbench::job {
namespace {

using report::Json;

// A complete ("X") event's fields.
struct Event {
  const Json* j;
  std::string name, cat;
  double ts, dur;
  int64_t tid;
  const Json& args() const {
    static const Json empty = Json::object();
    const auto it = j->find("args");
    return it != j->end() && it->is_object() ? *it : empty;
  }
};

int64_t tid_of(const Json& e) {
  const auto it = e.find("tid");
  if (it == e.end()) return -1;
  if (it->is_number_integer()) return it->get<int64_t>();
  return -2;  // Kineto's named tracks ("PyTorch Profiler"): none of ours
}

// Elements of one shape, or of every shape of a list ([[d...], ...]).
int64_t elements(const Json& dims) {
  if (!dims.is_array()) return -1;
  if (dims.empty()) return 1;
  if (dims.front().is_array()) {
    int64_t sum = 0;
    for (const auto& d : dims) {
      const int64_t n = elements(d);
      if (n < 0) return -1;
      sum += n;
    }
    return sum;
  }
  int64_t n = 1;
  for (const auto& d : dims) {
    if (!d.is_number_integer()) return -1;
    n *= d.get<int64_t>();
  }
  return n;
}

// The first argument's elements (c10d's ops and Gloo's annotations record
// their tensors' shapes in "Input Dims", the first argument the tensors).
int64_t first_input_elements(const Json& args) {
  const auto it = args.find("Input Dims");
  if (it == args.end() || !it->is_array() || it->empty()) return -1;
  // [] where the profiler recorded no shape for the argument: not a scalar.
  if (it->front().is_array() && it->front().empty()) return -1;
  return elements(it->front());
}

// c10d's ops whose first argument is the data sent (allreduce_(Tensor[]
// tensors, ...)); the others put the output first (allgather_(Tensor[][]
// output_tensors, Tensor[] input_tensors, ...), reduce_scatter_,
// _allgather_base_, alltoall_, gather_, scatter_): their sizes come from
// the execution's inputs instead.
bool input_first(const std::string& c10d_op) {
  for (const char* op : {"c10d::allreduce_", "c10d::allreduce_coalesced_", "c10d::broadcast_", "c10d::reduce_",
                         "c10d::send", "c10d::recv_", "c10d::recv_any_source_"})
    if (c10d_op == op) return true;
  return false;
}

// Whether an execution named `run` (Gloo's annotation, NCCL's kernel) can
// be the issued collective `issued`: NCCL runs send, recv and alltoall as
// one SendRecv kernel.
bool runs_as(const std::string& run, const std::string& issued) {
  const std::string r = collective_name(run);
  if (r.empty() || r == issued) return true;
  return r == "sendrecv" && (issued == "send" || issued == "recv" || issued == "alltoall");
}

std::string first_input_type(const Json& args) {
  const auto it = args.find("Input type");
  if (it == args.end() || !it->is_array() || it->empty() || !it->front().is_string()) return "";
  return it->front().get<std::string>();
}

template <typename T>
T arg_or(const Json& args, const char* key, T fallback) {
  const auto it = args.find(key);
  if (it == args.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    return fallback;
  }
}

void read_distributed_info(const Json& doc, RankTrace& r, const std::string& file) {
  const auto it = doc.find("distributedInfo");
  if (it == doc.end()) return;
  const Json& d = *it;
  if (!d.is_object()) throw UsageError(fmt::format("{}: distributedInfo is not an object", file));
  r.rank = arg_or<int>(d, "rank", -1);
  r.world_size = arg_or<int>(d, "world_size", -1);
  if (r.rank < 0 || r.world_size < 1 || r.rank >= r.world_size)
    throw UsageError(fmt::format("{}: distributedInfo has rank {} of world size {}", file, r.rank, r.world_size));
  r.backend = arg_or<std::string>(d, "backend", "");
  const auto pgs = d.find("pg_config");
  if (pgs == d.end() || !pgs->is_array()) return;
  for (const auto& g : *pgs) {
    if (!g.is_object()) continue;
    ProcessGroup pg;
    pg.name = arg_or<std::string>(g, "pg_name", "");
    pg.desc = arg_or<std::string>(g, "pg_desc", "");
    pg.backend = arg_or<std::string>(g, "backend_config", "");
    pg.ranks = arg_or<std::vector<int>>(g, "ranks", {});
    r.groups.push_back(std::move(pg));
  }
}

// Pairs the k-th execution with the k-th issue of each key (a group), while
// their collective names agree; the rest keep no execution span.
// Returns a line naming where pairing stopped, "" where it did not.
std::string pair_runs(std::vector<Collective>& colls, const std::map<std::string, std::vector<Event>>& runs_by_group) {
  std::map<std::string, size_t> next;
  std::string stopped;
  for (size_t i = 0; i < colls.size(); ++i) {
    Collective& c = colls[i];
    if (c.name == "barrier") continue;  // NCCL's barrier is an allreduce record of its own
    const auto it = runs_by_group.find(c.group);
    if (it == runs_by_group.end()) continue;
    size_t& k = next[c.group];
    if (k == SIZE_MAX || k >= it->second.size()) continue;
    const Event& run = it->second[k];
    if (!runs_as(run.name, c.name)) {
      if (stopped.empty())
        stopped = fmt::format("group {}'s executions stop pairing at collective {} ({} issued, {} ran): the "
                              "rest have no span",
                              c.group.empty() ? "?" : c.group, i + 1, c.name, report::printable(run.name, 60));
      k = SIZE_MAX;  // out of step: pair nothing more of this group
      continue;
    }
    ++k;
    if (run.dur < 0) continue;  // unfinished when the profiler stopped
    c.run = {run.ts, run.ts + run.dur};
    if (c.dtype.empty()) c.dtype = dtype_name(first_input_type(run.args()));
    if (c.in_nelems < 0) c.in_nelems = first_input_elements(run.args());
  }
  return stopped;
}

}  // namespace

bool is_kineto_trace(const report::Json& doc) {
  return doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array();
}

bool is_execution_trace(const report::Json& doc) {
  return doc.is_object() && doc.contains("nodes") && doc.contains("schema");
}

RankTrace read_kineto(const report::Json& doc, const std::string& file) {
  if (!is_kineto_trace(doc))
    throw UsageError(fmt::format("{}: not a PyTorch profiler trace (no traceEvents array)", file));
  RankTrace r;
  r.file = file;
  read_distributed_info(doc, r, file);

  std::vector<Event> steps, records, c10d_ops, gloo_runs, nccl_kernels, cpu_ops;
  std::vector<Span> kernels;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const auto ts = e.find("ts"), dur = e.find("dur"), name = e.find("name");
    if (ts == e.end() || dur == e.end() || name == e.end() || !ts->is_number() || !dur->is_number() ||
        !name->is_string())
      continue;
    Event ev{&e, name->get<std::string>(), e.value("cat", ""), ts->get<double>(), dur->get<double>(), tid_of(e)};
    // Kineto closes an event still open when the profiler stopped at the
    // stop time and marks it: no end, no shapes (a Gloo run on its own
    // thread after the last step). Kept in place (the k-th run stays the
    // k-th), without a span.
    if (const auto a = e.find("args"); a != e.end() && a->is_object() && a->value("finished", true) == false) {
      if (ev.cat == "user_annotation" && ev.name.rfind("gloo:", 0) == 0) {
        ev.dur = -1;
        gloo_runs.push_back(ev);
      } else if (ev.cat == "kernel" && ev.name.rfind("nccl", 0) == 0) {
        ev.dur = -1;
        nccl_kernels.push_back(ev);
      }
      continue;
    }
    if (ev.cat == "user_annotation" && ev.name.rfind("ProfilerStep#", 0) == 0) {
      steps.push_back(ev);
    } else if (ev.cat == "cpu_op" && ev.name == "record_param_comms") {
      records.push_back(ev);
    } else if (ev.cat == "cpu_op" && ev.name.rfind("c10d::", 0) == 0) {
      c10d_ops.push_back(ev);
    } else if (ev.cat == "user_annotation" && ev.name.rfind("gloo:", 0) == 0) {
      gloo_runs.push_back(ev);
    } else if (ev.cat == "kernel") {
      if (ev.name.rfind("nccl", 0) == 0)
        nccl_kernels.push_back(ev);
      else
        kernels.push_back({ev.ts, ev.ts + ev.dur});
    } else if (ev.cat == "cpu_op") {
      cpu_ops.push_back(ev);
    }
  }
  auto by_ts = [](const Event& a, const Event& b) { return a.ts < b.ts; };
  for (auto* v : {&steps, &records, &c10d_ops, &gloo_runs, &nccl_kernels, &cpu_ops})
    std::stable_sort(v->begin(), v->end(), by_ts);

  // The iterations, and the thread that marks them (the training loop's).
  int64_t main_tid = steps.empty() ? -1 : steps.front().tid;
  for (const auto& s : steps) {
    const std::string digits = s.name.substr(std::char_traits<char>::length("ProfilerStep#"));
    int n = -1;
    try {
      n = std::stoi(digits);
    } catch (const std::exception&) {
    }
    if (n < 0) throw UsageError(fmt::format("{}: an iteration named '{}'", file, report::printable(s.name, 60)));
    if (!r.step_numbers.empty() && n == r.step_numbers.back()) continue;  // a second track of the same step
    r.step_numbers.push_back(n);
    r.steps.push_back({s.ts, s.ts + s.dur});
  }

  const std::string only_group = r.groups.size() == 1 ? r.groups.front().name : "";
  auto group_size = [&](const std::string& name) {
    for (const auto& g : r.groups)
      if (g.name == name) return static_cast<int>(g.ranks.size());
    return r.groups.empty() && name.empty() ? r.world_size : 0;
  };

  // Issues: record_param_comms where the trace has them (NCCL, and Gloo in
  // some versions), else c10d's ops.
  std::map<std::string, std::vector<Event>> runs_by_group;
  if (!records.empty()) {
    for (const auto& ev : records) {
      const Json& a = ev.args();
      const std::string traced = arg_or<std::string>(a, "Collective name", "");
      Collective c;
      c.name = collective_name(traced);
      if (c.name.empty()) continue;  // init, wait: no data moved
      c.group = arg_or<std::string>(a, "Process Group Name", only_group);
      c.group_size = arg_or<int>(a, "Group size", group_size(c.group));
      c.dtype = dtype_name(arg_or<std::string>(a, "dtype", ""));
      c.in_nelems = arg_or<int64_t>(a, "In msg nelems", -1);
      c.out_nelems = arg_or<int64_t>(a, "Out msg nelems", -1);
      c.issue = {ev.ts, ev.ts + ev.dur};
      if (main_tid < 0) main_tid = ev.tid;
      r.collectives.push_back(std::move(c));
    }
    for (const auto& k : nccl_kernels)
      runs_by_group[arg_or<std::string>(k.args(), "Process Group Name", only_group)].push_back(k);
    // Gloo with record_param_comms: its runs, in order, where one group.
    if (nccl_kernels.empty() && r.groups.size() <= 1) runs_by_group[only_group] = gloo_runs;
  } else {
    for (const auto& ev : c10d_ops) {
      Collective c;
      c.name = collective_name(ev.name);
      if (c.name.empty()) continue;
      c.group = only_group;
      c.group_size = group_size(c.group);
      if (input_first(ev.name)) c.in_nelems = first_input_elements(ev.args());
      c.issue = {ev.ts, ev.ts + ev.dur};
      if (main_tid < 0) main_tid = ev.tid;
      r.collectives.push_back(std::move(c));
    }
    // Gloo runs a group's work in issue order (one queue), on its own
    // threads; with several groups the trace does not say whose a run is.
    if (r.groups.size() <= 1) runs_by_group[only_group] = gloo_runs;
  }
  r.pairing_note = pair_runs(r.collectives, runs_by_group);
  for (auto& c : r.collectives) {
    if (c.name == "allgather" && c.out_nelems < 0 && c.in_nelems >= 0 && c.group_size > 0)
      c.out_nelems = c.in_nelems * c.group_size;
    const int width = dtype_bytes(c.dtype);
    const int64_t n = std::max(c.in_nelems, c.out_nelems);
    c.bytes = width > 0 && n >= 0 ? n * width : -1;
    for (size_t i = 0; i < r.steps.size(); ++i)
      if (c.issue.begin >= r.steps[i].begin && c.issue.begin < r.steps[i].end)
        c.step = r.step_numbers[i];
  }

  // Compute: GPU kernels where there are any; else the training thread's
  // CPU ops, less the collectives' calls (c10d's ops hold none of them).
  if (!kernels.empty() || !nccl_kernels.empty()) {
    r.device = "cuda";
    r.compute = trace::merge(std::move(kernels));
  } else {
    r.device = "cpu";
    std::vector<Span> ops;
    for (const auto& ev : cpu_ops)
      if (ev.tid == main_tid) ops.push_back({ev.ts, ev.ts + ev.dur});
    std::vector<Span> calls;
    for (const auto& c : r.collectives) calls.push_back(c.issue);
    r.compute = trace::subtract(trace::merge(std::move(ops)), trace::merge(std::move(calls)));
  }
  return r;
}

}  // namespace dtbench::job
