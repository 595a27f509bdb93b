// `dtbench project`: iteration time and scaling efficiency at rank counts
// that were not measured, from a 1-rank compute profile (a ddp report with
// --trace, or a model and per-phase times) and a network (measured `dtbench
// comm` reports, or bandwidth and latency per level). docs/metrics.md
// "Projection" derives the model.
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/units.h"
#include "project/comm_fit.h"
#include "project/profile.h"
#include "project/project_reporter.h"
#include "project/projection.h"
#include "models/model.h"
#include "report/json_io.h"
#include "train/flops.h"
#include "train/trainer.h"

namespace dtbench::cli {
namespace {

struct ProjectFlags {
  // Profile: a report, or a model with phase times.
  std::string profile, row;
  std::vector<std::string> measured;
  std::string model;
  std::int64_t batch_size = 32, image_size = 224, seq_len = 128;
  double forward_ms = -1, backward_ms = -1, optimizer_ms = -1, ddp_overhead_ms = 0;
  // Or forward and backward from an achieved training rate: --tflops, or
  // --peak-tflops x --mfu (-1: not given).
  double tflops = -1, peak_tflops = -1, mfu = -1;
  int threads = 0;  // with --model: threads per rank (0: not stated)
  // Network.
  int ranks_per_node = 1;
  std::string intra_bw, intra_latency, inter_bw, inter_latency, base_latency = "0";
  std::string comm_intra, comm_inter;
  std::string algo = "auto";
  double bw_scale = 1;
  // What to project, and what-ifs.
  std::string world_sizes = "1,2,4,8,16,32,64,128,256,512,1024,2048,4096";
  double bucket_cap_mb = 0, first_bucket_cap_mb = 0;  // 0: not given (the profile's buckets)
  std::string compression = "none";
  bool no_overlap = false;
  double cores_per_node = 0;
  // Strategies and memory.
  std::string reducers = "ddp";
  std::string optimizer = "sgd", param_dtype = "float32", reshard_after_forward = "true";
  std::string memory_per_rank, activation_memory;
  std::string reduce_scatter = "native";
  double fusion_threshold_mb = -1, cycle_time_ms = -1;  // horovod's (-1: HOROVOD_* or Horovod's defaults)
  std::string json;
  bool bucket_cap_given = false, first_bucket_cap_given = false;  // set after parsing
  // The --model options given on the command line (set after parsing): a
  // --profile report ran its own image size and phases, so they are refused
  // with it rather than ignored; --batch-size and --seq-len move its
  // profile to that shape (rescale_from_report).
  std::vector<std::string> model_only_given;
  bool batch_given = false, seq_given = false;
};

std::vector<int> parse_world_sizes(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    const auto v = parse_number(item);
    if (!v || *v < 1 || *v > 1e7 || *v != static_cast<int>(*v))
      throw UsageError(fmt::format("--world-sizes: '{}' is not a rank count (a whole number >= 1)", item));
    out.push_back(static_cast<int>(*v));
  }
  if (out.empty()) throw UsageError("--world-sizes: no rank counts given");
  return out;
}

// A level from --X-bw/--X-latency or --comm-X (with its all_gather and
// reduce_scatter fits where the report swept them); `needed` says whether
// some world size uses it.
project::MeasuredLevel make_level(const std::string& bw, const std::string& latency, const std::string& report,
                                  const std::string& name, bool needed) {
  if (!report.empty()) {
    if (!bw.empty() || !latency.empty())
      throw UsageError(fmt::format("--comm-{0} and --{0}-bw/--{0}-latency both describe the same level: give one",
                                   name));
    return project::level_from_comm_report(report, "--comm-" + name);
  }
  if (bw.empty() != latency.empty())
    throw UsageError(fmt::format("--{0}-bw and --{0}-latency go together (e.g. --{0}-bw 100Gbit/s --{0}-latency 5us)",
                                 name));
  if (bw.empty()) {
    if (needed)
      throw UsageError(fmt::format("the network {} is not described: give --{}-bw and --{}-latency, or --comm-{} "
                                   "REPORT (a `dtbench comm` allreduce sweep over it)",
                                   name == "intra" ? "inside a node" : "between nodes", name, name, name));
    return {};
  }
  project::MeasuredLevel m;
  m.level.bus_bw = parse_bandwidth(bw, "--" + name + "-bw");
  m.level.latency_s = parse_seconds(latency, "--" + name + "-latency");
  return m;
}

// FSDP units of a decoder from its shapes (the root first, then a block
// each), compute shared by forward multiply-adds.
std::vector<project::UnitWork> unit_work(const std::vector<models::UnitShape>& shapes) {
  double macs = 0;
  for (const auto& u : shapes) macs += u.forward_macs;
  std::vector<project::UnitWork> out;
  for (const auto& u : shapes) out.push_back({u.param_elements, macs > 0 ? u.forward_macs / macs : 0});
  return out;
}

// A report's decoder by its shapes (the config's model, layers, width,
// heads, key/value heads, vocabulary, sequence length); null where the
// registry has no shapes for its model.
struct ReportShapes {
  const models::ModelEntry* entry = nullptr;
  models::ModelOptions options;
  std::int64_t seq_len = 0;
};
ReportShapes report_shapes(const nlohmann::ordered_json& doc, const std::string& path) {
  if (!doc.contains("config") || !doc.at("config").is_object()) return {};
  const auto& c = doc.at("config");
  train::TrainOptions t;
  t.model = report::json_value_or<std::string>(c, "model", "", path);
  if (t.model.empty()) return {};
  const auto& entry = models::find_model(t.model);
  if (!entry.unit_shapes || !entry.forward_macs) return {};
  t.seq_len = report::json_value_or<std::int64_t>(c, "seq_len", t.seq_len, path);
  t.layers = report::json_value_or<std::int64_t>(c, "layers", 0, path);
  t.width = report::json_value_or<std::int64_t>(c, "width", 0, path);
  t.heads = report::json_value_or<std::int64_t>(c, "heads", 0, path);
  t.kv_heads = report::json_value_or<std::int64_t>(c, "kv_heads", 0, path);
  t.vocab = report::json_value_or<std::int64_t>(c, "vocab", 0, path);
  return {&entry, train::model_options(t), t.seq_len};
}

// The FSDP units and the parameter count of a report's decoder, at `seq_len`
// tokens (the units' compute shares move with it).
void units_from_report(project::ComputeProfile& p, const ReportShapes& s, std::int64_t seq_len) {
  if (s.entry == nullptr) return;
  p.units = unit_work(s.entry->unit_shapes(s.options, seq_len));
  p.parameters = static_cast<double>(s.entry->count_parameters(s.options));
}

// --batch-size / --seq-len with --profile: the report's profile moved to that
// shape (project::rescale_profile). The compute per example at another
// length comes from the decoder's shapes (forward multiply-adds, attention
// included); the T²-growing activations are the attention probabilities
// models/gpt.cc and llama.cc keep for backward: one float32 per batch
// element, head and query-key pair, in every layer.
void rescale_from_report(project::ComputeProfile& p, const ReportShapes& s, const ProjectFlags& f,
                         const std::string& path) {
  const std::int64_t batch = f.batch_given ? f.batch_size : p.batch_per_rank;
  std::int64_t seq_len = p.tokens_per_example;
  double macs_ratio = 1, attention = 0;
  if (s.entry != nullptr && p.tokens_per_example > 0) {
    const double t = static_cast<double>(p.tokens_per_example);
    attention = 4.0 * static_cast<double>(p.batch_per_rank) * static_cast<double>(s.options.heads) * t * t *
                static_cast<double>(s.options.layers);
    if (f.seq_given) {
      if (f.seq_len < 1) throw UsageError("--seq-len must be at least 1");
      seq_len = f.seq_len;
      macs_ratio = s.entry->forward_macs(s.options, seq_len) / s.entry->forward_macs(s.options, p.tokens_per_example);
    }
  } else if (f.seq_given) {
    throw UsageError(fmt::format("--seq-len with --profile scales a decoder's profile (gpt2, llama families); {}'s "
                                 "model '{}' has no shapes to scale its compute by",
                                 path, p.model));
  }
  project::rescale_profile(p, batch, seq_len, macs_ratio, attention);
}

project::ComputeProfile model_profile(const ProjectFlags& f) {
  if (f.ddp_overhead_ms < 0) throw UsageError("--ddp-overhead-ms must not be negative");
  if (f.batch_size < 1 || f.image_size < 1 || f.seq_len < 1)
    throw UsageError("--batch-size, --image-size and --seq-len must be at least 1");
  const bool by_rate = f.tflops != -1 || f.peak_tflops != -1 || f.mfu != -1;
  double achieved = 0;  // TFLOP/s per rank
  if (by_rate) {
    if (f.forward_ms != -1 || f.backward_ms != -1)
      throw UsageError("--tflops (or --peak-tflops with --mfu) gives forward and backward: not with --forward-ms or "
                       "--backward-ms");
    if (f.tflops != -1 && (f.peak_tflops != -1 || f.mfu != -1))
      throw UsageError("give the achieved rate as --tflops, or as --peak-tflops with --mfu, not both");
    if (f.tflops == -1 && (f.peak_tflops == -1 || f.mfu == -1))
      throw UsageError("--peak-tflops and --mfu go together (the achieved rate is their product)");
    if (f.tflops != -1 && !(f.tflops > 0)) throw UsageError("--tflops must be positive");
    if (f.tflops == -1 && (!(f.peak_tflops > 0) || !(f.mfu > 0) || f.mfu > 1))
      throw UsageError("--peak-tflops must be positive and --mfu a fraction in (0, 1]");
    if (f.optimizer_ms < 0)
      throw UsageError("--tflops gives forward and backward; the optimizer step needs --optimizer-ms too");
    achieved = f.tflops != -1 ? f.tflops : f.peak_tflops * f.mfu;
  } else if (f.forward_ms < 0 || f.backward_ms <= 0 || f.optimizer_ms < 0) {
    throw UsageError("--model needs the phase times of one rank: --forward-ms, --backward-ms and --optimizer-ms, "
                     "or --tflops and --optimizer-ms (or give --profile REPORT instead)");
  }
  project::ComputeProfile p;
  const auto& entry = models::find_model(f.model);
  std::vector<project::LayerWork> layers;
  double param_elements = 0;
  if (entry.unit_shapes) {
    // A decoder by its shapes, not made (llama3-70b would take 280 GB): its
    // blocks in forward order, then the head (the root unit's compute).
    const auto units = entry.unit_shapes(entry.defaults, f.seq_len);
    for (const auto& u : units) param_elements += u.param_elements;
    for (std::size_t i = 1; i < units.size(); ++i) layers.push_back({units[i].forward_macs, units[i].param_elements});
    layers.push_back({units[0].forward_macs, 0});  // the head's gradients: the root's, ready at the end
    p.units = unit_work(units);
  } else {
    train::TrainOptions t;
    t.model = f.model;
    t.batch_size = f.batch_size;
    t.image_size = f.image_size;
    t.seq_len = f.seq_len;
    const auto cost = train::measure_forward_cost(t);
    for (const auto& l : cost.layers) layers.push_back({l.macs, l.param_elements});
    param_elements = cost.param_elements;
  }
  p.source = "command line";
  p.model = f.model;
  p.batch_per_rank = f.batch_size;
  if (entry.input == models::InputKind::kTokens) p.tokens_per_example = f.seq_len;
  p.forward_s = f.forward_ms / 1e3;
  p.backward_s = f.backward_ms / 1e3;
  if (by_rate) {
    // Training FLOPs: 2 per multiply-add forward, twice that backward (the
    // 6N per token of the scaling-law papers, attention included).
    double macs = 0;
    for (const auto& l : layers) macs += l.macs;
    p.forward_s = 2 * macs * static_cast<double>(f.batch_size) / (achieved * 1e12);
    p.backward_s = 2 * p.forward_s;
  }
  p.optimizer_s = f.optimizer_ms / 1e3;
  p.fixed_s = f.ddp_overhead_ms / 1e3;
  p.threads = f.threads;
  p.parameters = param_elements;
  p.grads = project::grads_from_layers(layers, param_elements, p.backward_s);
  if (!f.activation_memory.empty())
    p.activation_bytes = static_cast<double>(parse_bytes(f.activation_memory, "--activation-memory"));
  return p;
}

int run_project(const ProjectFlags& f) {
  if (!f.json.empty()) report::require_writable_path(f.json, "--json");
  if (f.profile.empty() == f.model.empty())
    throw UsageError("give the compute profile either as --profile REPORT (a `dtbench ddp --trace` report) or as "
                     "--model with --forward-ms/--backward-ms/--optimizer-ms, not both");
  if (f.ranks_per_node < 1) throw UsageError("--ranks-per-node must be at least 1");
  if (!(f.bw_scale > 0)) throw UsageError("--bw-scale must be positive");
  if (f.cores_per_node < 0) throw UsageError("--cores-per-node must not be negative");
  if (f.threads < 0) throw UsageError("--threads must not be negative");
  if (f.threads > 0 && !f.profile.empty())
    throw UsageError("--threads goes with --model; a --profile report says the threads it ran with");
  if (!f.profile.empty() && !f.model_only_given.empty())
    throw UsageError(fmt::format(
        "{}: options of --model; a --profile report is projected at the image size and phase times it ran "
        "(profile the size to project: `dtbench ddp --world-sizes 1 --trace T --json R`; --batch-size and "
        "--seq-len move a report's profile)",
        fmt::join(f.model_only_given, ", ")));
  project::ProjectOptions o;
  const auto strategies = project::parse_strategies(f.reducers);
  if (f.optimizer == "sgd") o.memory.optimizer_states = 1;
  else if (f.optimizer == "adamw") o.memory.optimizer_states = 2;
  else throw UsageError(fmt::format("--optimizer: '{}' is not an optimizer (use sgd or adamw)", f.optimizer));
  if (f.param_dtype == "bf16") o.memory.param_bytes = 2;
  else if (f.param_dtype != "float32")
    throw UsageError(fmt::format("--param-dtype: '{}' is not a parameter dtype (use float32 or bf16)", f.param_dtype));
  if (f.reshard_after_forward == "false") o.memory.reshard_after_forward = false;
  else if (f.reshard_after_forward != "true")
    throw UsageError(fmt::format("--reshard-after-forward: '{}' is not true or false", f.reshard_after_forward));
  const bool fsdp = std::find(strategies.begin(), strategies.end(), project::Strategy::kFsdp) != strategies.end();
  if (!fsdp && (f.param_dtype != "float32" || f.reshard_after_forward != "true"))
    throw UsageError("--param-dtype and --reshard-after-forward describe fsdp: add fsdp to --reducer");
  if (!f.memory_per_rank.empty()) {
    o.memory_limit = static_cast<double>(parse_bytes(f.memory_per_rank, "--memory-per-rank"));
    if (!(o.memory_limit > 0)) throw UsageError("--memory-per-rank must be positive");
  }
  {
    train::TrainOptions h;  // Horovod's knobs as dtbench ddp resolves them
    h.reducer = "horovod";
    h.fusion_threshold_mb = f.fusion_threshold_mb;
    h.cycle_time_ms = f.cycle_time_ms;
    if ((f.fusion_threshold_mb != -1 && !(f.fusion_threshold_mb >= 0)) || (f.cycle_time_ms != -1 && !(f.cycle_time_ms > 0)))
      throw UsageError("--fusion-threshold-mb must not be negative and --cycle-time-ms must be positive");
    train::resolve_horovod(h);
    o.horovod.threshold_bytes = h.fusion_threshold_mb * 1024 * 1024;
    o.horovod.cycle_s = h.cycle_time_ms / 1e3;
  }
  if (f.reduce_scatter == "allreduce") o.reduce_scatter_as_allreduce = true;
  else if (f.reduce_scatter != "native")
    throw UsageError(fmt::format("--reduce-scatter: '{}' is not native or allreduce", f.reduce_scatter));
  if (!f.activation_memory.empty() && !f.profile.empty())
    throw UsageError("--activation-memory goes with --model; a --profile report's activations are measured");
  o.world_sizes = parse_world_sizes(f.world_sizes);
  o.algo = project::parse_algo(f.algo);
  o.overlap = !f.no_overlap;
  o.cores_per_node = f.cores_per_node;
  if (f.compression == "fp16" || f.compression == "bf16") o.wire_ratio = 0.5;
  else if (f.compression != "none")
    throw UsageError(fmt::format("--compression: '{}' is not a wire format (use none, fp16 or bf16)", f.compression));
  if (f.bucket_cap_given) o.memory.bucket_cap_bytes = f.bucket_cap_mb * 1024 * 1024;
  if (f.bucket_cap_given || f.first_bucket_cap_given) {
    if ((f.bucket_cap_given && !(f.bucket_cap_mb > 0)) || (f.first_bucket_cap_given && !(f.first_bucket_cap_mb > 0)))
      throw UsageError("--bucket-cap-mb and --first-bucket-cap-mb must be positive");
    project::BucketOptions b;
    if (f.bucket_cap_given) b.cap_bytes = f.bucket_cap_mb * 1024 * 1024;
    if (f.first_bucket_cap_given) b.first_cap_bytes = f.first_bucket_cap_mb * 1024 * 1024;
    o.rebucket = b;
  }
  o.net.ranks_per_node = f.ranks_per_node;
  int max_world = 1;
  for (int w : o.world_sizes) max_world = std::max(max_world, w);
  const bool multi_node = max_world > f.ranks_per_node;
  const bool multi_rank_node = std::min(max_world, f.ranks_per_node) > 1;
  const auto intra = make_level(f.intra_bw, f.intra_latency, f.comm_intra, "intra", multi_rank_node);
  const auto inter = make_level(f.inter_bw, f.inter_latency, f.comm_inter, "inter", multi_node);
  o.net.intra = intra.level;
  o.net.inter = inter.level;
  o.net.all_gather = {intra.all_gather, inter.all_gather};
  o.net.reduce_scatter = {intra.reduce_scatter, inter.reduce_scatter};
  o.net.base_latency_s = parse_seconds(f.base_latency, "--base-latency");
  auto scale = [&](project::Level& l) {
    l.bus_bw *= f.bw_scale;
    for (auto& pt : l.curve) pt.second /= f.bw_scale;
  };
  scale(o.net.intra);
  scale(o.net.inter);
  for (auto* s : {&o.net.all_gather, &o.net.reduce_scatter})
    for (auto* l : {&s->intra, &s->inter})
      if (*l) scale(**l);

  project::ComputeProfile p;
  ReportShapes shapes;
  if (!f.profile.empty()) {
    const auto doc = report::read_json_file(f.profile);
    p = project::profile_from_ddp_report(doc, f.profile, f.row);
    shapes = report_shapes(doc, f.profile);
    units_from_report(p, shapes, f.seq_given ? f.seq_len : shapes.seq_len);
  } else {
    p = model_profile(f);
  }
  for (const auto& path : f.measured) {
    const auto doc = report::read_json_file(path);
    for (const auto& m : project::measured_points(doc, path)) p.measured.push_back(m);
    for (const auto& m : project::one_rank_rows(doc, path)) p.one_rank.push_back(m);
  }
  if (!f.profile.empty() && (f.batch_given || f.seq_given)) rescale_from_report(p, shapes, f, f.profile);

  std::vector<project::StrategyProjection> all;
  for (auto s : strategies) {
    o.strategy = s;
    all.push_back({o, project::project(p, o)});
  }
  std::ostringstream text;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0) text << "\n";
    project::write_projection_table(text, p, all[i].options, all[i].rows);
  }
  std::cout << text.str();
  if (!f.json.empty()) {
    report::write_json_atomic(f.json, project::projection_json(p, all));
    std::cout << "Report: " << f.json << "\n";
  }
  return 0;
}

}  // namespace

Action register_project(CLI::App& app) {
  auto f = std::make_shared<ProjectFlags>();
  auto* cmd = app.add_subcommand(
      "project", "Project iteration time and scaling efficiency to 2-4096 ranks from a 1-rank profile and a network model");
  cmd->footer(
      "Profile: --profile REPORT (from `dtbench ddp --world-sizes 1 --trace T --json REPORT`), or --model M "
      "--forward-ms F --backward-ms B --optimizer-ms O.\nNetwork: per level either measured (--comm-intra / "
      "--comm-inter: `dtbench comm` allreduce reports) or stated (--intra-bw/--intra-latency, "
      "--inter-bw/--inter-latency; bandwidths as 100Gbit/s, 4x100Gb/s, 12.5GB/s).\nThe model: docs/metrics.md "
      "\"Projection\".");
  cmd->add_option("--profile", f->profile, "A `dtbench ddp` report with a 1-rank row traced (--trace) to profile");
  cmd->add_option("--row", f->row, "Label of the 1-rank row to profile (default: the first traced 1-rank DDP row)");
  cmd->add_option("--measured", f->measured,
                  "Other `dtbench ddp` reports: their multi-rank rows are set beside the projection, their 1-rank rows give "
                  "a strategy its own fixed cost and peak (repeatable)");
  cmd->add_option("-m,--model", f->model, "Profile from this model's layers (see `dtbench models`) and the phase times");
  cmd->add_option("-b,--batch-size", f->batch_size,
                  "Examples per rank (with --model; with --profile: project at this batch, compute and activations "
                  "scaled from the report's)")
      ->capture_default_str();
  cmd->add_option("--image-size", f->image_size, "Image side (with --model)")->capture_default_str();
  cmd->add_option("--seq-len", f->seq_len,
                  "Tokens per example (with --model transformer; with --profile of a gpt2/llama report: project at "
                  "this length, compute from the shapes' FLOPs, activations linear plus the attention's T^2)")
      ->capture_default_str();
  cmd->add_option("--forward-ms", f->forward_ms, "One rank's forward + loss, ms (with --model)");
  cmd->add_option("--backward-ms", f->backward_ms, "One rank's backward compute, ms (with --model)");
  cmd->add_option("--optimizer-ms", f->optimizer_ms, "One rank's optimizer step, ms (with --model)");
  cmd->add_option("--tflops", f->tflops,
                  "Instead of --forward-ms/--backward-ms (with --model): achieved training TFLOP/s per rank; forward "
                  "= 2 x the shapes' multiply-adds x batch / rate, backward twice that");
  cmd->add_option("--peak-tflops", f->peak_tflops, "With --mfu, instead of --tflops: the rank's peak TFLOP/s");
  cmd->add_option("--mfu", f->mfu, "With --peak-tflops: the model FLOPs utilisation achieved, a fraction (0.4 = 40 %)");
  cmd->add_option("--ddp-overhead-ms", f->ddp_overhead_ms,
                  "DDP's fixed cost per iteration at 1 rank, ms (with --model; 1-rank DDP - no ddp)")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "Intra-op threads per rank the phase times were taken with (with --model)");
  cmd->add_option("--ranks-per-node", f->ranks_per_node, "Ranks per node (GPUs per machine)")->capture_default_str();
  cmd->add_option("--cores-per-node", f->cores_per_node,
                  "CPU training: the cores of a node, shared by the ranks' threads and what their allreduces keep "
                  "busy (the comm reports' cpu_util); 0 = no contention (GPUs)")
      ->capture_default_str();
  cmd->add_option("--intra-bw", f->intra_bw, "Bus bandwidth between the ranks of a node (e.g. 130GB/s)");
  cmd->add_option("--intra-latency", f->intra_latency, "Latency per collective step inside a node (e.g. 3.4us)");
  cmd->add_option("--inter-bw", f->inter_bw, "Bandwidth of a node's NICs together (e.g. 4x100Gbit/s)");
  cmd->add_option("--inter-latency", f->inter_latency, "Latency per collective step between nodes (e.g. 9.6us)");
  cmd->add_option("--base-latency", f->base_latency, "Fixed latency of every collective (e.g. 8.4us)")
      ->capture_default_str();
  cmd->add_option("--comm-intra", f->comm_intra, "A `dtbench comm` report of one node's ranks (measured level): its allreduce sweep, and its allgather/reduce_scatter sweeps for the sharded strategies where it has them");
  cmd->add_option("--comm-inter", f->comm_inter, "A `dtbench comm` report across nodes, best 1 rank per node (allreduce; allgather/reduce_scatter as --comm-intra)");
  cmd->add_option("--algo", f->algo, "Allreduce algorithm: ring, tree or auto (the cheaper per bucket, as NCCL)")
      ->capture_default_str();
  cmd->add_option("--world-sizes", f->world_sizes, "Rank counts to project")->capture_default_str();
  auto* cap = cmd->add_option("--bucket-cap-mb", f->bucket_cap_mb, "What if: re-bucket the gradients at this capacity, MiB");
  auto* first = cmd->add_option("--first-bucket-cap-mb", f->first_bucket_cap_mb, "What if: first bucket's capacity, MiB");
  cmd->add_option("--compression", f->compression, "What if: allreduce in fp16 or bf16 (half the bytes)")
      ->capture_default_str();
  cmd->add_flag("--no-overlap", f->no_overlap, "What if: every allreduce after backward ends");
  cmd->add_option("--bw-scale", f->bw_scale, "What if: every bandwidth times this (2 = a network twice as fast)")
      ->capture_default_str();
  cmd->add_option("--reducer", f->reducers,
                  "Strategies to project, comma-separated: ddp, horovod, zero1, zero2, fsdp (fsdp: a decoder's units)")
      ->capture_default_str();
  cmd->add_option("--optimizer", f->optimizer, "Optimizer whose state the memory counts: sgd (momentum) or adamw")
      ->capture_default_str();
  cmd->add_option("--param-dtype", f->param_dtype,
                  "fsdp: dtype units are gathered and computed in (bf16 = FSDP2's MixedPrecisionPolicy, float32 "
                  "reduction)")
      ->capture_default_str();
  cmd->add_option("--reshard-after-forward", f->reshard_after_forward,
                  "fsdp: free each unit after its forward and gather it again in backward (true/false)")
      ->capture_default_str();
  cmd->add_option("--memory-per-rank", f->memory_per_rank,
                  "Memory of one rank (e.g. 80GiB): which strategies fit, and the largest batch that does");
  cmd->add_option("--activation-memory", f->activation_memory,
                  "One rank's activations at --batch-size (with --model; e.g. 12GiB): memory beside the model states");
  cmd->add_option("--fusion-threshold-mb", f->fusion_threshold_mb,
                  "horovod: fusion threshold, MiB (default HOROVOD_FUSION_THRESHOLD, else Horovod's 128)");
  cmd->add_option("--cycle-time-ms", f->cycle_time_ms,
                  "horovod: background loop cycle, ms (default HOROVOD_CYCLE_TIME, else Horovod's 1)");
  cmd->add_option("--reduce-scatter", f->reduce_scatter,
                  "zero1/zero2/fsdp: native (a ring reduce_scatter) or allreduce (a backend without one of its own, as "
                  "Gloo, where dtbench ddp allreduces the bucket)")
      ->capture_default_str();
  cmd->add_option("--json", f->json, "Write the projection as JSON here (schema dtbench.project)");
  return [f, cap, first, cmd]() {
    f->bucket_cap_given = cap->count() > 0;
    f->first_bucket_cap_given = first->count() > 0;
    for (const char* name : {"--image-size", "--forward-ms", "--backward-ms", "--optimizer-ms", "--ddp-overhead-ms",
                             "--tflops", "--peak-tflops", "--mfu"})
      if (cmd->get_option(name)->count() > 0) f->model_only_given.push_back(name);
    f->batch_given = cmd->get_option("--batch-size")->count() > 0;
    f->seq_given = cmd->get_option("--seq-len")->count() > 0;
    return run_project(*f);
  };
}

}  // namespace dtbench::cli
