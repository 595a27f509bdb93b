#include "report/ddp_record.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"
#include "report/json_io.h"
#include "stats/stats.h"

namespace dtbench::report {

const std::vector<double>& phase(const RankSamples& r, const std::string& name) {
  if (name == "forward") return r.forward;
  if (name == "backward") return r.backward;
  if (name == "comm_wait") return r.comm_wait;
  if (name == "optimizer") return r.optimizer;
  if (name == "total") return r.total;
  throw UsageError(fmt::format("unknown phase '{}'", name));
}

const std::vector<double>& device_phase(const RankSamples& r, const std::string& name) {
  if (name == "forward") return r.device.forward;
  if (name == "backward") return r.device.backward;
  if (name == "comm_wait") return r.device.comm_wait;
  if (name == "optimizer") return r.device.optimizer;
  if (name == "total") return r.device.total;
  throw UsageError(fmt::format("unknown phase '{}'", name));
}

namespace {

using PhaseOf = const std::vector<double>& (*)(const RankSamples&, const std::string&);

std::vector<double> slowest_of(const DdpRun& run, const std::string& phase_name, PhaseOf get) {
  const bool exposed = phase_name == "backward+comm_wait";
  std::vector<double> out;
  for (const auto& r : run.ranks) {
    const auto& xs = get(r, exposed ? "backward" : phase_name);
    const auto& wait = get(r, "comm_wait");
    if (out.size() < xs.size()) out.resize(xs.size(), 0.0);
    for (std::size_t i = 0; i < xs.size(); ++i)
      out[i] = std::max(out[i], xs[i] + (exposed && i < wait.size() ? wait[i] : 0.0));
  }
  return out;
}

}  // namespace

std::vector<double> phase_times(const DdpRun& run, const std::string& phase_name) {
  return slowest_of(run, phase_name, &phase);
}

bool has_device_phases(const DdpRun& run) {
  if (run.ranks.empty()) return false;
  for (const auto& r : run.ranks)
    if (r.device.total.empty()) return false;
  return true;
}

std::vector<double> device_phase_times(const DdpRun& run, const std::string& phase_name) {
  return has_device_phases(run) ? slowest_of(run, phase_name, &device_phase) : std::vector<double>{};
}

std::vector<double> per_rank_throughput(const DdpRun& run) {
  std::vector<double> out;
  for (double t : slowest_rank_times(run))
    out.push_back(t > 0 ? run.examples_per_rank() / t : 0.0);
  return out;
}

std::vector<double> slowest_rank_times(const DdpRun& run) { return phase_times(run, "total"); }

std::vector<double> pooled_times(const DdpRun& run) {
  std::vector<double> out;
  for (const auto& r : run.ranks) out.insert(out.end(), r.total.begin(), r.total.end());
  return out;
}

double job_examples_per_sec(const DdpRun& run, double percentile) {
  const double t = stats::percentile(slowest_rank_times(run), percentile);
  return t > 0 ? static_cast<double>(run.global_batch()) / t : 0.0;
}

double achieved_tflops_per_rank(const DdpRun& run) {
  if (run.train_flops_per_example <= 0 || run.ranks.empty()) return 0;
  const double p50 = stats::percentile(slowest_rank_times(run), 50);
  return p50 > 0 ? run.examples_per_rank() * run.train_flops_per_example / p50 / 1e12
                 : 0;
}

double tokens_per_sec_per_rank(const DdpRun& run) {
  if (run.tokens_per_example <= 0 || run.ranks.empty()) return 0;
  const double p50 = stats::percentile(slowest_rank_times(run), 50);
  return p50 > 0 ? run.examples_per_rank() * static_cast<double>(run.tokens_per_example) / p50 : 0;
}

double model_flops_utilization(const DdpRun& run) {
  return run.peak_tflops > 0 ? achieved_tflops_per_rank(run) / run.peak_tflops : 0;
}

double rank_p50_spread_percent(const DdpRun& run) {
  if (run.ranks.size() < 2) return 0;
  double lo = 0, hi = 0;
  bool first = true;
  for (const auto& r : run.ranks) {
    if (r.total.empty()) continue;
    const double p = stats::percentile(r.total, 50);
    lo = first ? p : std::min(lo, p);
    hi = first ? p : std::max(hi, p);
    first = false;
  }
  return (first || lo <= 0) ? 0 : (hi - lo) / lo * 100.0;
}

std::vector<double> parse_percentiles(const std::string& text, const std::string& flag) {
  std::vector<double> out;
  for (const auto& item : split_list(text)) {
    const auto v = parse_number(item);
    if (!v || *v < 0 || *v > 100)
      throw UsageError(
          fmt::format("{}: '{}' is not a percentile between 0 and 100 (in '{}')", flag, item, text));
    out.push_back(*v);
  }
  return out;
}

std::vector<NodeFigures> per_node_figures(const DdpRun& run) {
  std::map<int, std::vector<const RankSamples*>> by_node;
  for (const auto& r : run.ranks) by_node[r.node].push_back(&r);
  std::vector<NodeFigures> out;
  for (const auto& [node, ranks] : by_node) {
    NodeFigures f;
    f.node = node;
    std::vector<double> total, wait;
    for (std::size_t i = 0; i < ranks.front()->total.size(); ++i) {
      double t = 0, w = 0;
      for (const auto* r : ranks) {
        if (i < r->total.size()) t = std::max(t, r->total[i]);
        if (i < r->comm_wait.size()) w = std::max(w, r->comm_wait[i]);
      }
      total.push_back(t);
      wait.push_back(w);
    }
    for (const auto* r : ranks) f.ranks.push_back(r->rank);
    f.p50_total = stats::percentile(total, 50);
    f.p50_comm_wait = stats::percentile(wait, 50);
    f.examples_per_sec =
        f.p50_total > 0 ? static_cast<double>(ranks.size()) * run.examples_per_rank() / f.p50_total : 0;
    out.push_back(std::move(f));
  }
  return out;
}

nlohmann::ordered_json to_json(const DdpRun& run) {
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const auto& r : run.ranks) {
    nlohmann::ordered_json jr{{"rank", r.rank}, {"node", r.node}};
    if (!r.cpus.empty()) jr["cpus"] = r.cpus;
    for (const char* p : kPhaseNames) jr[p] = phase(r, p);
    if (!r.device.total.empty()) {
      nlohmann::ordered_json d;
      for (const char* p : kPhaseNames) d[p] = device_phase(r, p);
      jr["device"] = d;
    }
    ranks.push_back(jr);
  }
  const auto s = stats::summarize(pooled_times(run));
  const auto slow = stats::summarize(slowest_rank_times(run));
  nlohmann::ordered_json per_node = nlohmann::ordered_json::array();
  for (const auto& f : per_node_figures(run))
    per_node.push_back({{"node", f.node},
                        {"ranks", f.ranks},
                        {"p50_total", f.p50_total},
                        {"p50_comm_wait", f.p50_comm_wait},
                        {"examples_per_sec_p50", f.examples_per_sec}});
  return {{"label", run.label},
          {"reducer", run.reducer},
          {"world_size", run.world_size},
          {"nodes", run.nodes},
          {"batch_per_rank", run.batch_per_rank},
          {"tp", run.tp},
          {"pp", run.pp},
          {"dp", run.dp()},
          {"global_batch", run.global_batch()},
          {"param_hash", run.param_hash},
          {"threads", run.threads},
          {"malloc", run.malloc},
          {"train_flops_per_example", run.train_flops_per_example},
          {"achieved_tflops_per_rank", achieved_tflops_per_rank(run)},
          {"peak_tflops", run.peak_tflops},
          {"mfu", model_flops_utilization(run)},
          {"tokens_per_example", run.tokens_per_example},
          {"tokens_per_sec_per_rank", tokens_per_sec_per_rank(run)},
          {"memory",
           {{"peak_bytes", run.peak_bytes},
            {"peak_rss_bytes", run.peak_rss_bytes},
            {"model_state_bytes", run.model_state_bytes},
            {"model_state_expected_bytes", run.model_state_expected_bytes}}},
          // benchmark.py's figures: every rank's iterations pooled; ex/s per rank.
          {"summary",
           {{"samples", s.count},
            {"mean", s.mean},
            {"p50", s.p50},
            {"p75", s.p75},
            {"p90", s.p90},
            {"p95", s.p95},
            {"p99", s.p99},
            {"examples_per_sec_per_rank_p50", s.p50 > 0 ? run.examples_per_rank() / s.p50 : 0.0},
            {"rank_p50_spread_percent", rank_p50_spread_percent(run)}}},
          // The job's: per iteration the slowest rank; ex/s of all ranks.
          {"slowest_rank_summary",
           {{"iterations", slow.count},
            {"mean", slow.mean},
            {"p50", slow.p50},
            {"p75", slow.p75},
            {"p90", slow.p90},
            {"p95", slow.p95},
            {"p99", slow.p99},
            {"job_examples_per_sec_p50", slow.p50 > 0 ? run.global_batch() / slow.p50 : 0.0}}},
          {"per_node", per_node},
          {"ranks", ranks}};
}

namespace {

std::vector<double> get_samples(const nlohmann::ordered_json& j, const char* key,
                                const std::string& where) {
  auto xs = json_field<std::vector<double>>(j, key, where);
  for (double x : xs)
    if (!std::isfinite(x) || x < 0)
      throw UsageError(fmt::format("{}: '{}' holds a negative or non-finite time", where, key));
  return xs;
}

}  // namespace

DdpRun ddp_run_from_json(const nlohmann::ordered_json& j, const std::string& where) {
  DdpRun run;
  run.label = json_field<std::string>(j, "label", where);
  run.reducer = json_field<std::string>(j, "reducer", where);
  run.world_size = json_field<int>(j, "world_size", where);
  run.nodes = json_field<int>(j, "nodes", where);
  run.batch_per_rank = json_field<std::int64_t>(j, "batch_per_rank", where);
  run.param_hash = json_field<std::string>(j, "param_hash", where);
  // Optional: reports written before rows recorded what they ran with.
  if (j.contains("threads")) run.threads = json_field<int>(j, "threads", where);
  if (j.contains("malloc")) run.malloc = json_field<std::string>(j, "malloc", where);
  if (j.contains("train_flops_per_example"))
    run.train_flops_per_example = json_field<double>(j, "train_flops_per_example", where);
  if (j.contains("peak_tflops")) run.peak_tflops = json_field<double>(j, "peak_tflops", where);
  if (j.contains("tokens_per_example"))
    run.tokens_per_example = json_field<std::int64_t>(j, "tokens_per_example", where);
  if (run.tokens_per_example < 0)
    throw UsageError(fmt::format("{}: 'tokens_per_example' must not be negative", where));
  if (!(run.train_flops_per_example >= 0) || !(run.peak_tflops >= 0))
    throw UsageError(fmt::format("{}: 'train_flops_per_example' and 'peak_tflops' must not be negative", where));
  if (run.threads < 0) throw UsageError(fmt::format("{}: 'threads' must not be negative", where));
  if (j.contains("memory")) {  // optional: reports before memory figures
    const std::string w = where + " memory";
    const auto& m = j.at("memory");
    if (!m.is_object()) throw UsageError(fmt::format("{}: must be an object", w));
    run.peak_bytes = json_field<std::int64_t>(m, "peak_bytes", w);
    run.model_state_bytes = json_field<std::int64_t>(m, "model_state_bytes", w);
    run.model_state_expected_bytes = json_field<std::int64_t>(m, "model_state_expected_bytes", w);
    if (m.contains("peak_rss_bytes")) run.peak_rss_bytes = json_field<std::int64_t>(m, "peak_rss_bytes", w);
    if (run.peak_bytes < -1 || run.model_state_bytes < -1 || run.model_state_expected_bytes < -1 ||
        run.peak_rss_bytes < -1)
      throw UsageError(fmt::format("{}: byte counts must be at least -1 (not recorded)", w));
  }
  if (run.world_size < 1 || run.nodes < 1 || run.batch_per_rank < 1)
    throw UsageError(fmt::format("{}: world_size, nodes and batch_per_rank must be positive", where));
  if (j.contains("tp")) run.tp = json_field<int>(j, "tp", where);  // optional: reports before layouts
  if (j.contains("pp")) run.pp = json_field<int>(j, "pp", where);  // optional: reports before pipelines
  if (run.tp < 1 || run.world_size % run.tp != 0)
    throw UsageError(fmt::format("{}: 'tp' {} must be a positive divisor of world_size {}", where, run.tp,
                                 run.world_size));
  if (run.pp < 1 || run.world_size % (run.tp * run.pp) != 0)
    throw UsageError(fmt::format("{}: 'tp' {} x 'pp' {} must divide world_size {}", where, run.tp, run.pp,
                                 run.world_size));
  const auto& ranks = j.contains("ranks") ? j.at("ranks") : nlohmann::ordered_json();
  if (!ranks.is_array() || ranks.empty())
    throw UsageError(fmt::format("{}: 'ranks' must be a non-empty array", where));
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::string w = fmt::format("{} rank entry {}", where, i);
    RankSamples r;
    r.rank = json_field<int>(ranks[i], "rank", w);
    r.node = json_field<int>(ranks[i], "node", w);
    if (ranks[i].contains("cpus")) r.cpus = json_field<std::string>(ranks[i], "cpus", w);
    r.forward = get_samples(ranks[i], "forward", w);
    r.backward = get_samples(ranks[i], "backward", w);
    r.comm_wait = get_samples(ranks[i], "comm_wait", w);
    r.optimizer = get_samples(ranks[i], "optimizer", w);
    r.total = get_samples(ranks[i], "total", w);
    if (r.total.empty()) throw UsageError(fmt::format("{}: no samples", w));
    if (ranks[i].contains("device")) {  // optional: CUDA-event phases
      const auto& d = ranks[i].at("device");
      const std::string wd = w + " device";
      if (!d.is_object()) throw UsageError(fmt::format("{}: must be an object", wd));
      r.device.forward = get_samples(d, "forward", wd);
      r.device.backward = get_samples(d, "backward", wd);
      r.device.comm_wait = get_samples(d, "comm_wait", wd);
      r.device.optimizer = get_samples(d, "optimizer", wd);
      r.device.total = get_samples(d, "total", wd);
      for (const auto* v : {&r.device.forward, &r.device.backward, &r.device.comm_wait, &r.device.optimizer,
                            &r.device.total})
        if (v->size() != r.total.size())
          throw UsageError(fmt::format("{}: phases of different lengths", wd));
    }
    for (double t : r.total)
      if (t <= 0) throw UsageError(fmt::format("{}: 'total' holds a zero time", w));
    run.ranks.push_back(std::move(r));
  }
  return run;
}

}  // namespace dtbench::report
