#include "cli/jobs/project_profile.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/units.h"
#include "models/model.h"
#include "project/profile.h"
#include "report/json_io.h"
#include "train/flops.h"
#include "train/trainer.h"

namespace dtbench::cli {
namespace {

// A decoder's shape for the layout's formulas (project/layout_model.h).
project::DecoderShape decoder_shape(const models::ModelEntry& entry, const models::ModelOptions& o,
                                    std::int64_t seq_len) {
  project::DecoderShape d;
  d.swiglu = entry.sets_ffn_hidden;  // the llama family
  d.layers = static_cast<double>(o.layers);
  d.hidden = static_cast<double>(o.width);
  d.heads = static_cast<double>(o.heads);
  d.kv_heads = static_cast<double>(o.kv_heads > 0 ? o.kv_heads : o.heads);
  d.ffn = static_cast<double>(d.swiglu ? models::llama_ffn_hidden(o) : 4 * o.width);
  d.vocab = static_cast<double>(o.vocab);
  d.seq = static_cast<double>(seq_len);
  return d;
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
  t.ffn_hidden_size = report::json_value_or<std::int64_t>(c, "ffn_hidden_size", 0, path);
  t.vocab = report::json_value_or<std::int64_t>(c, "vocab", 0, path);
  return {&entry, train::model_options(t), t.seq_len};
}

// The FSDP units and the parameter count of a report's decoder, at `seq_len`
// tokens (the units' compute shares move with it).
void units_from_report(project::ComputeProfile& p, const ReportShapes& s, std::int64_t seq_len) {
  if (s.entry == nullptr) return;
  p.units = unit_work(s.entry->unit_shapes(s.options, seq_len));
  p.parameters = static_cast<double>(s.entry->count_parameters(s.options));
  p.decoder = decoder_shape(*s.entry, s.options, seq_len);
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

// --model's preset with the shape flags given (0: the preset's).
train::TrainOptions shaped_options(const ProjectFlags& f) {
  train::TrainOptions t;
  t.model = f.model;
  t.layers = f.layers;
  t.width = f.width;
  t.heads = f.heads;
  t.kv_heads = f.kv_heads;
  t.vocab = f.vocab;
  t.ffn_hidden_size = f.ffn_hidden_size;
  t.seq_len = f.seq_len;
  return t;
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
  const bool shaped = f.layers || f.width || f.heads || f.kv_heads || f.vocab || f.ffn_hidden_size;
  if (shaped && !entry.unit_shapes)
    throw UsageError(fmt::format("--layers, --width, --heads, --kv-heads, --vocab and --ffn-hidden-size shape a gpt2 "
                                 "or llama preset; {} has none", entry.name));
  if (entry.unit_shapes) {
    // A decoder by its shapes, not made (llama3-70b would take 280 GB): its
    // blocks' tensors in forward order (a gradient is bucketed whole; a
    // block's compute shared by its tensors' elements), then the head (the
    // root unit's compute). Backward makes an untied head's gradient first;
    // the rest of the root (the embedding, a tied head) is ready at the end.
    const auto t = shaped_options(f);
    // train's limit on the sequence guards an allocation; a projection of
    // shapes allocates nothing (torchtitan's context-parallel runs reach
    // 262,144 tokens).
    if (t.seq_len > (std::int64_t{1} << 24))
      throw UsageError(fmt::format("--seq-len {} must be at most {}", t.seq_len, std::int64_t{1} << 24));
    auto checked = t;
    checked.seq_len = std::min<std::int64_t>(t.seq_len, 65536);
    train::validate(checked);
    if (t.ffn_hidden_size > 0 && !entry.sets_ffn_hidden)
      throw UsageError(fmt::format("--ffn-hidden-size sets a Llama's feed-forward width; {}'s is fixed", entry.name));
    const auto shape = train::model_options(t);
    const int64_t kv = shape.kv_heads > 0 ? shape.kv_heads : shape.heads;
    if (shape.width % shape.heads != 0)
      throw UsageError(fmt::format("{}: width {} is not {} heads of one size", entry.name, shape.width, shape.heads));
    if (shape.heads % kv != 0)
      throw UsageError(fmt::format("{}: {} heads are not a multiple of {} key/value heads", entry.name, shape.heads, kv));
    const auto units = entry.unit_shapes(shape, f.seq_len);
    for (const auto& u : units) param_elements += u.param_elements;
    for (std::size_t i = 1; i < units.size(); ++i) {
      const auto& u = units[i];
      if (u.tensors.empty()) {
        layers.push_back({u.forward_macs, u.param_elements});
        continue;
      }
      for (double t : u.tensors) layers.push_back({u.forward_macs * t / u.param_elements, t});
    }
    layers.push_back({units[0].forward_macs, units[0].head_elements});
    p.units = unit_work(units);
    p.decoder = decoder_shape(entry, shape, f.seq_len);
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
  if (shaped) {  // the shape projected, not the preset's
    const auto o = train::model_options(shaped_options(f));
    p.model += fmt::format(" shaped: {} layers, width {}, {} heads", o.layers, o.width, o.heads);
    if (entry.sets_ffn_hidden)
      p.model += fmt::format(", {} key/value heads, feed-forward {}", o.kv_heads > 0 ? o.kv_heads : o.heads,
                             models::llama_ffn_hidden(o));
    p.model += fmt::format(", vocabulary {}", o.vocab);
  }
  p.batch_per_rank = f.batch_size;
  if (entry.input == models::InputKind::kTokens) p.tokens_per_example = f.seq_len;
  p.forward_s = f.forward_ms / 1e3;
  p.backward_s = f.backward_ms / 1e3;
  p.optimizer_s = f.optimizer_ms / 1e3;
  if (by_rate) {
    // The rate over the whole step, as a 1-rank train row's achieved
    // TFLOP/s and mfu count it (and torchtitan's): the training FLOPs, 2 per
    // multiply-add forward and twice that backward (the 6N per token of the
    // scaling-law papers, attention included), over forward, backward and
    // the optimizer's step. The step's own time comes out; the rest is
    // forward and backward, 1 : 2.
    double macs = 0;
    for (const auto& l : layers) macs += l.macs;
    const double step_s = 6 * macs * static_cast<double>(f.batch_size) / (achieved * 1e12);
    if (!(step_s > p.optimizer_s))
      throw UsageError(fmt::format("--optimizer-ms {} is the whole step at that rate ({:.3f} ms for forward, backward "
                                   "and the step): the rate counts all three",
                                   f.optimizer_ms, step_s * 1e3));
    p.forward_s = (step_s - p.optimizer_s) / 3;
    p.backward_s = 2 * p.forward_s;
  }
  p.fixed_s = f.ddp_overhead_ms / 1e3;
  p.threads = f.threads;
  p.parameters = param_elements;
  p.grads = project::grads_from_layers(layers, param_elements, p.backward_s);
  if (!f.activation_memory.empty())
    p.activation_bytes = static_cast<double>(parse_bytes(f.activation_memory, "--activation-memory"));
  return p;
}

}  // namespace

project::ComputeProfile project_profile(const ProjectFlags& f) {
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
  return p;
}

}  // namespace dtbench::cli
