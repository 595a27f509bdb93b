// `dtbench project` on a layout (docs/metrics.md "Projection: layouts"): the
// data-parallel strategy (projection.cc) on a group of world / (tp · pp)
// ranks that holds one pipeline stage's tensor-parallel share of the model,
// inside the layout's own time and memory (layout_model.h).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "project/projection.h"

namespace dtbench::project {
namespace {

// A level whose bandwidth `sharers` groups use at once (a node's NICs,
// shared by the node's data-parallel groups: one per TP rank).
Level shared(Level l, double sharers) {
  l.bus_bw /= sharers;
  for (auto& pt : l.curve) pt.second *= sharers;
  return l;
}

// One pipeline stage of the layout, as one rank of its TP group holds it.
struct StageShare {
  int blocks = 0;
  double parameters = 0;     // elements per rank
  double compute = 0;        // share of the whole model's forward (and backward) a rank computes
  double block_compute = 0;  // of which the blocks' (what full recomputation repeats)
  std::vector<UnitWork> units;  // FSDP units per rank: the stage's root part (if any), then its blocks
};

// Splits the profile's units (root first, then the blocks) into the
// layout's stages: blocks as stage_blocks(), the embedding with the first
// stage, the head (and the final norm) with the last; an untied head's
// elements with the last stage, the rest of the root (the embedding) with
// the first; a tied head's weight on both (as Megatron-LM keeps a copy on
// the last stage). Blocks divide by tp; the root by tp with loss_parallel.
std::vector<StageShare> stage_shares(const ComputeProfile& p, const LayoutOptions& l, double head_elements) {
  const double t = l.tp;
  const int layers = static_cast<int>(p.units.size()) - 1;
  const auto split = stage_blocks(layers, l.pp);
  const UnitWork& root = p.units[0];
  const double root_t = l.loss_parallel ? t : 1;
  std::vector<StageShare> out;
  int next = 1;
  for (int s = 0; s < l.pp; ++s) {
    StageShare st;
    st.blocks = split[static_cast<std::size_t>(s)];
    double root_part = 0;
    const bool first = s == 0, last = s == l.pp - 1;
    if (l.pp == 1) root_part = root.param_elements;
    else if (first) root_part = root.param_elements - head_elements;
    else if (last) root_part = head_elements > 0 ? head_elements : root.param_elements;
    if (root_part > 0) st.units.push_back({root_part / root_t, 0});
    if (last) st.compute += root.compute_share / root_t;
    for (int b = 0; b < st.blocks; ++b, ++next) {
      const auto& u = p.units[static_cast<std::size_t>(next)];
      st.units.push_back({u.param_elements / t, u.compute_share / t});
      st.block_compute += u.compute_share / t;
    }
    st.compute += st.block_compute;
    if (!st.units.empty() && root_part > 0 && last) st.units.front().compute_share = root.compute_share / root_t;
    for (const auto& u : st.units) st.parameters += u.param_elements;
    // FSDP's shares are of the stage's own compute.
    for (auto& u : st.units) u.compute_share = st.compute > 0 ? u.compute_share / st.compute : 0;
    out.push_back(st);
  }
  return out;
}

// Bytes one rank's activations take for the whole model at tp 1 without
// recomputation, by the formula (blocks, logits and log-probabilities).
double whole_model_activations(const DecoderShape& d, double element_bytes, bool flash, double batch) {
  LayoutOptions none;
  none.activation_bytes = element_bytes;
  none.flash_attention = flash;
  const auto block = block_activations(d, element_bytes, flash);
  return (d.layers * kept_per_token(block, d, none) + d.vocab * (element_bytes + 4)) * batch * d.seq;
}

// What the profile's activation figure was measured in (layout_model.h):
// a report's precision and dtbench's eager attention, or (a stated figure)
// the projection's own.
struct Reference {
  double element_bytes;
  bool flash;
};
Reference reference_of(const ComputeProfile& p, const LayoutOptions& l) {
  if (p.activation_element_bytes > 0) return {p.activation_element_bytes, false};
  return {l.activation_bytes, l.flash_attention};
}

// The profile's activations at the layout's precision and attention kernel
// (no layout): the formula's where nobody measured or stated them, else the
// figure times the formula's ratio between the two.
ComputeProfile with_layout_activations(const ComputeProfile& p, const LayoutOptions& l) {
  ComputeProfile out = p;
  const double b = static_cast<double>(p.batch_per_rank);
  const double asked = whole_model_activations(*p.decoder, l.activation_bytes, l.flash_attention, b);
  if (p.activation_bytes < 0) {
    out.activation_bytes = asked;
  } else {
    const auto ref = reference_of(p, l);
    out.activation_bytes = p.activation_bytes * asked / whole_model_activations(*p.decoder, ref.element_bytes, ref.flash, b);
  }
  return out;
}

}  // namespace

std::vector<ProjectionRow> project(const ComputeProfile& profile, const ProjectOptions& opts) {
  const LayoutOptions& l = opts.layout;
  check_layout(l, profile.decoder ? &*profile.decoder : nullptr, profile.batch_per_rank);
  if (l.is_default() && !l.loss_parallel) {
    // A decoder: its activations at the precision and attention kernel
    // asked for (the formula's where nobody measured or stated them).
    const bool formula = profile.decoder && profile.activation_bytes < 0;
    auto rows = project_data_parallel(profile.decoder ? with_layout_activations(profile, l) : profile, opts);
    for (auto& r : rows)
      if (formula) r.activations_from = "Korthikanti's formula";
    for (auto& r : rows)
      r.stages = {{profile.decoder ? static_cast<int>(profile.decoder->layers) : 0,
                   profile.parameters > 0 ? profile.parameters : r.memory.parameters / 4, 1, r.memory}};
    return rows;
  }
  if (opts.cores_per_node > 0)
    throw UsageError("--cores-per-node: CPU contention is modelled for data parallelism alone, not with a layout");
  if (profile.units.empty())
    throw UsageError(fmt::format("{}: no units (blocks) known for this profile's model to lay out", profile.source));
  if (profile.activations_recompute != "none")
    throw UsageError(fmt::format("{}: its rows ran with --activation-checkpointing {}; a layout's profile is a run "
                                 "without recomputation (the projection adds it)",
                                 profile.source, profile.activations_recompute));
  if (opts.strategy == Strategy::kZero2 && l.pp > 1)
    throw UsageError("zero2 with --pp: its gradient shards would need a reduce-scatter per microbatch (DeepSpeed "
                     "refuses ZeRO-2 under a pipeline); use zero1 or fsdp");
  if (opts.strategy == Strategy::kFsdp && l.pp > 1 && opts.memory.reshard_after_forward)
    throw UsageError("fsdp with --pp: the projection gathers each unit once per step, as torchtitan runs FSDP under a "
                     "pipeline (units kept gathered between microbatches): add --reshard-after-forward false");
  const DecoderShape& d = *profile.decoder;
  const double t = l.tp, pp = l.pp, m = l.microbatches, c = l.cp;
  const double v = l.schedule == PpSchedule::kInterleaved1f1b ? l.stages_per_rank : 1;
  const double b = static_cast<double>(profile.batch_per_rank), s = d.seq;
  // The tokens of one microbatch a rank holds: its 1/cp of the sequence.
  const double mb_tokens = b / m * s / c;
  const double e = l.activation_bytes;

  // Activations: Korthikanti's per block, the stage's blocks, the
  // microbatches it holds in flight; the working set of one block while
  // recomputation runs; the last stage's logits (in the compute dtype) and
  // the float32 log-probabilities cross-entropy keeps.
  const auto block = block_activations(d, e, l.flash_attention);
  LayoutOptions plain = l;
  plain.recompute = Recompute::kNone;
  const double kept = kept_per_token(block, d, l);
  const double working = l.recompute == Recompute::kFull        ? kept_per_token(block, d, plain)
                         : l.recompute == Recompute::kSelective ? block.core / t
                                                                : 0.0;
  // Per token of the vocabulary: the logits (e bytes) live from the head
  // to the log-softmax that reads them; autograd keeps only the float32
  // log-probabilities (log_softmax's backward reads its output, nll_loss's
  // none). GPipe runs every microbatch's forward, loss included, before the
  // first backward: the last stage holds M microbatches' log-probabilities
  // and, at the end of the last forward, one microbatch's logits beside
  // them (measured: 73.0 MiB projected against 64.7 MiB while all M logits
  // were counted; docs/PERFORMANCE.md); 1F1B's last stage runs each
  // backward right after its forward: one of each.
  const double vocab_share = d.vocab / (l.loss_parallel ? t : 1);
  const double logprobs_in_flight = l.pp > 1 && l.schedule == PpSchedule::kGpipe ? m : 1;
  auto stage_activations = [&](int stage, int blocks) {
    double a = blocks * kept * mb_tokens * microbatches_in_flight(l, stage) + working * mb_tokens;
    if (stage == l.pp - 1) a += vocab_share * (4 * logprobs_in_flight + e) * mb_tokens;
    return a;
  };
  // A stated or measured figure (the whole model at tp 1 without
  // recomputation) calibrates the formula: the layout's figure times
  // stated / formula.
  const auto ref = reference_of(profile, l);
  const double formula_whole = whole_model_activations(d, ref.element_bytes, ref.flash, b);
  const double calibration = profile.activation_bytes >= 0 ? profile.activation_bytes / formula_whole : 1.0;
  const std::string activations_from =
      profile.activation_bytes >= 0
          ? fmt::format("Korthikanti's formula x {:.3f} (the {} figure over the formula's at tp 1)", calibration,
                        profile.source == "command line" ? "stated" : "profile's")
          : std::string("Korthikanti's formula");

  const double head_elements = profile.units[0].param_elements > 0 && profile.decoder->swiglu
                                   ? d.vocab * d.hidden
                                   : 0.0;  // llama's untied head; gpt2 ties it to the embedding
  const auto shares = stage_shares(profile, l, head_elements);
  const double psi = profile.parameters > 0 ? profile.parameters : 0;
  double total_units = 0;
  for (const auto& u : profile.units) total_units += u.param_elements;
  const double whole = psi > 0 ? psi : total_units;
  // The attention core's share of a block's multiply-adds: what selective
  // recomputation repeats (2hs of hs·(weights per token) + 2hs per token).
  const double block_weights = d.swiglu ? 2 * d.hidden * d.hidden + 2 * d.hidden * d.hidden * (d.kv_heads > 0 ? d.kv_heads : d.heads) / d.heads + 3 * d.hidden * d.ffn
                                        : 4 * d.hidden * d.hidden + 2 * d.hidden * d.ffn;
  const double core_share = 2 * d.hidden * s / (block_weights + 2 * d.hidden * s);

  auto compose = [&](int world) {
    const int model_parallel = l.tp * l.pp * l.cp;
    if (world % model_parallel != 0)
      throw UsageError(fmt::format("--world-sizes: {} ranks are not a multiple of tp {} x pp {} x cp {}", world, l.tp,
                                   l.pp, l.cp));
    const int dp = world / model_parallel;
    // The data-parallel groups (with cp, dp x cp ranks: the strategy shards
    // and reduces over both, as torchtitan's dp_shard_cp mesh): tp ranks
    // apart, so a node holds ranks_per_node / tp of each, and the node's tp
    // groups share its NICs.
    ProjectOptions dpo = opts;
    dpo.layout = LayoutOptions{};
    dpo.memory.accumulate_unsharded = l.pp > 1 && l.microbatches > 1;
    dpo.world_sizes = {dp * l.cp};
    const int rpn = std::max(1, opts.net.ranks_per_node);
    const double sharers = std::min(l.tp, rpn);
    dpo.net.ranks_per_node = std::max(1, rpn / l.tp);
    dpo.net.inter = shared(opts.net.inter, sharers);
    for (auto* levels : {&dpo.net.all_gather, &dpo.net.reduce_scatter})
      if (levels->inter) levels->inter = shared(*levels->inter, sharers);

    ProjectionRow row;
    std::vector<ProjectionRow> per_stage;
    for (int st = 0; st < l.pp; ++st) {
      const auto& sh = shares[static_cast<std::size_t>(st)];
      const double recompute = l.recompute == Recompute::kFull        ? profile.forward_s * sh.block_compute
                               : l.recompute == Recompute::kSelective ? profile.forward_s * sh.block_compute * core_share
                                                                      : 0.0;
      // One microbatch's work of this stage, for the strategy's schedule:
      // its communication overlaps the first microbatch's forward and the
      // last one's backward.
      ComputeProfile sp = profile;
      sp.one_rank.clear();
      sp.measured.clear();
      sp.forward_s = profile.forward_s * sh.compute / (m * c);
      sp.backward_s = (profile.backward_s * sh.compute + recompute) / (m * c);
      sp.optimizer_s = profile.optimizer_s * sh.parameters / whole;
      sp.parameters = sh.parameters;
      sp.units = sh.units;
      const double grad_scale = sh.parameters / whole, time_scale = profile.backward_s > 0 ? sp.backward_s / profile.backward_s : 0;
      for (auto& g : sp.grads) {
        g.bytes *= grad_scale;
        g.ready_s *= time_scale;
      }
      sp.activation_bytes = stage_activations(st, sh.blocks) * calibration;
      auto r = project_data_parallel(sp, dpo).front();
      if (dp * l.cp == 1) {
        // One replica: no data-parallel strategy runs (dtbench train drops
        // it), so none of its buffers or gathered units exist.
        r.memory.buffers = r.memory.kept_buffers = r.memory.gathered = 0;
      }
      r.recompute_s = recompute / c;
      r.stages = {{sh.blocks, sh.parameters, microbatches_in_flight(l, st), r.memory}};
      per_stage.push_back(r);
    }
    // TP: per block and microbatch two collectives forward and two backward
    // (two more with full recomputation, which repeats the forward), of the
    // microbatch's activations: allreduces, or with SP a reduce-scatter and
    // an all-gather each (the same bytes per rank).
    const double tp_bytes = mb_tokens * d.hidden * e;
    double tp_one = 0;
    if (l.tp > 1)
      tp_one = l.sequence_parallel
                   ? ring_shard_collective_seconds(opts.net, tp_bytes, l.tp, ShardCollective::kReduceScatter) +
                         ring_shard_collective_seconds(opts.net, tp_bytes, l.tp, ShardCollective::kAllGather)
                   : allreduce_cost(opts.net, tp_bytes, l.tp, opts.algo).seconds;
    // PP: each microbatch's activations to the next stage forward and their
    // gradients back, per chunk; on the fabric once the job spans nodes
    // (every rank of a node sends at once through its NICs).
    double xfer = 0;
    if (l.pp > 1) {
      const double bytes = mb_tokens * d.hidden * e / (l.sequence_parallel ? t : 1);
      const bool across = world > rpn;
      const Level& level = across ? opts.net.inter : opts.net.intra;
      xfer = opts.net.base_latency_s + level.latency_s + bytes * level.seconds_per_byte(bytes) * (across ? rpn : 1);
    }
    // CP: in each block, ring attention passes the rank's keys and values
    // (h/tp wide: repeated to every head before attention) around the cp
    // ranks in cp - 1 steps forward; backward passes them again with their
    // gradients (twice the bytes). Each step overlaps one block of the
    // attention core (its 1/cp); only what the core does not cover shows.
    double pass = 0;
    if (l.cp > 1) {
      const double bytes = 2 * mb_tokens * d.hidden * e / t;
      const bool across = l.cp * l.tp > rpn;
      const Level& level = across ? opts.net.inter : opts.net.intra;
      pass = opts.net.base_latency_s + level.latency_s +
             bytes * level.seconds_per_byte(bytes) * (across ? std::min(rpn, world) : 1);
    }
    // Each stage's work per microbatch (its compute and what of TP, CP and
    // PP does not overlap it) and its tail (what the strategy adds once per
    // step: exposed data-parallel communication, its fixed cost, the
    // optimizer's step on the stage's share). The slowest stage's work sets
    // the pipeline's pace; the longest tail ends the step.
    struct Pace {
      double compute = 0, tp = 0, cp = 0, work = 0, tail = 0;
    };
    std::vector<Pace> paces;
    for (std::size_t i = 0; i < shares.size(); ++i) {
      const auto& sh = shares[i];
      Pace pc;
      pc.compute = ((profile.forward_s + profile.backward_s) * sh.compute) / c + per_stage[i].recompute_s;
      pc.tp = sh.blocks * (l.recompute == Recompute::kFull ? 6 : 4) * tp_one;
      if (l.cp > 1) {
        const double core =
            profile.forward_s * (sh.blocks > 0 ? sh.block_compute / sh.blocks : 0) * core_share / (m * c);
        const double forward = (c - 1) * std::max(0.0, pass - core / c);
        const double backward = (c - 1) * std::max(0.0, 2 * pass - 2 * core / c);
        pc.cp = sh.blocks * ((l.recompute == Recompute::kFull ? 2 : 1) * forward + backward);
      }
      pc.work = pc.compute / m + pc.tp + pc.cp + (l.pp > 1 ? 2 * v * xfer : 0.0);
      // The strategy's row holds one microbatch's compute; the rest of it comes once.
      pc.tail = per_stage[i].iteration_s - pc.compute / m;
      paces.push_back(pc);
    }
    std::size_t slow = 0, last = 0;
    for (std::size_t i = 1; i < paces.size(); ++i) {
      if (paces[i].work > paces[slow].work) slow = i;
      if (paces[i].tail > paces[last].tail) last = i;
    }
    row = per_stage[last];
    const double slots = pipeline_slots(l);
    row.iteration_s = slots * paces[slow].work + paces[last].tail;
    row.recompute_s = per_stage[slow].recompute_s;
    row.bubble_s = (slots - m) * paces[slow].work;
    row.tp_comm_s = m * paces[slow].tp;
    row.pp_comm_s = l.pp > 1 ? m * 2 * v * xfer : 0.0;
    row.cp_comm_s = m * paces[slow].cp;
    row.cp = l.cp;
    row.world_size = world;
    row.nodes = nodes_for(opts.net, world);
    row.dp = dp;
    row.tp = l.tp;
    row.pp = l.pp;
    row.activations_known = true;
    row.activations_from = activations_from;
    row.stages.clear();
    std::size_t peak = 0;
    for (std::size_t i = 0; i < per_stage.size(); ++i) {
      row.stages.push_back(per_stage[i].stages.front());
      if (per_stage[i].memory.total() > per_stage[peak].memory.total()) peak = i;
    }
    row.memory = per_stage[peak].memory;
    row.fits.reset();
    row.largest_batch = -1;
    if (opts.memory_limit > 0) row.fits = row.memory.total() <= opts.memory_limit;
    // A measured row of this tensor-parallel degree, pipeline (degree,
    // schedule, microbatches, chunks), recomputation and precision, of this
    // strategy or of one replica (no strategy).
    row.measured_s.reset();
    row.measured_peak_bytes.reset();
    // dtbench train's TP has no SP, no loss parallel and eager attention.
    const bool trained_layout = l.cp == 1 && !l.sequence_parallel && !l.loss_parallel && !l.flash_attention;
    auto same_pipeline = [&](const MeasuredRow& meas) {
      return meas.pp == l.pp && (l.pp == 1 || (meas.pp_schedule == pp_schedule_name(l.schedule) &&
                                               meas.microbatches == l.microbatches &&
                                               meas.stages_per_rank == l.stages_per_rank));
    };
    if (trained_layout)
      for (const auto& meas : profile.measured)
        if (meas.world_size == world && meas.tp == l.tp && same_pipeline(meas) &&
            meas.recompute == recompute_name(l.recompute) && (meas.amp != "none") == (l.activation_bytes == 2) &&
            (dp == 1 || measured_as(opts.strategy, meas.reducer))) {
          row.measured_s = meas.seconds;
          if (meas.peak_bytes >= 0) row.measured_peak_bytes = meas.peak_bytes;
        }
    if (row.iteration_s > 0) {
      row.examples_per_s = dp * b / row.iteration_s;
      row.tokens_per_s_per_rank = b * static_cast<double>(profile.tokens_per_example) / row.iteration_s / (t * pp * c);
    }
    return row;
  };
  const double base = compose(l.tp * l.pp * l.cp).iteration_s;
  std::vector<ProjectionRow> rows;
  for (int w : opts.world_sizes) {
    if (w < 1) throw UsageError(fmt::format("--world-sizes: {} is not a rank count", w));
    auto row = compose(w);
    row.efficiency = row.iteration_s > 0 ? base / row.iteration_s : 0;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace dtbench::project
