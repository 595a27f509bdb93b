// `dtbench project` on layouts, on literal inputs: Korthikanti et al.'s
// activations per block (their own figures reproduced with dropout), the
// microbatches each pipeline rank holds, the bubble, the stages' blocks,
// a pipeline projection worked by hand, and what a layout refuses.
#include <algorithm>

#include <gtest/gtest.h>

#include "core/error.h"
#include "project/layout_model.h"
#include "project/layout_search.h"
#include "project/projection.h"

namespace dtbench::project {
namespace {

DecoderShape gpt(double h, double a, double s) {
  DecoderShape d;
  d.layers = 4;
  d.hidden = h;
  d.heads = a;
  d.kv_heads = a;
  d.ffn = 4 * h;
  d.vocab = 100;
  d.seq = s;
  return d;
}

// A 4-block GPT (h 64, 4 heads, vocabulary 100, 8 tokens, batch 4): units
// of 0.2 of the compute each (the root first), forward 1 s, backward 2 s,
// 1,000 x `scale` parameters whose gradients (4 B each) are ready at the
// end of backward.
ComputeProfile small_profile(double scale = 1) {
  ComputeProfile p;
  p.source = "test";
  p.batch_per_rank = 4;
  p.tokens_per_example = 8;
  p.forward_s = 1;
  p.backward_s = 2;
  p.grads = {{4000 * scale, 2.0}};
  p.parameters = 1000 * scale;
  const UnitWork unit{200 * scale, 0.2};
  p.units = {unit, unit, unit, unit, unit};
  p.decoder = gpt(64, 4, 8);
  return p;
}

// Korthikanti et al. 2022, section 4 (bytes per token of one layer, 16-bit
// activations, GPT with dropout), at h 1024, a 16, s 2048, t 4:
//   no parallelism             34h + 5as      = 34,816 + 163,840 = 198,656
//   tensor parallel            10h + 24h/t + 5as/t = 10,240 + 6,144 + 40,960 = 57,344
//   + sequence parallel        (34h + 5as)/t  = 49,664
//   + selective recomputation  34h/t          = 8,704
//   full recomputation         2h             = 2,048 (2h/t = 512 with SP)
TEST(LayoutActivations, KorthikantisFiguresWithDropout) {
  const auto d = gpt(1024, 16, 2048);
  const auto a = block_activations(d, 2, false, true);
  LayoutOptions l;
  l.activation_bytes = 2;
  EXPECT_DOUBLE_EQ(kept_per_token(a, d, l), 198656);
  l.tp = 4;
  EXPECT_DOUBLE_EQ(kept_per_token(a, d, l), 57344);
  l.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(kept_per_token(a, d, l), 49664);
  l.recompute = Recompute::kSelective;
  EXPECT_DOUBLE_EQ(kept_per_token(a, d, l), 8704);
  l.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(kept_per_token(a, d, l), 512);
  l.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(kept_per_token(a, d, l), 2048);
}

// Without dropout, dtbench's GPT block keeps 16h + as elements per token (the
// count torch_unit_tests' Checkpoint test measures to the byte in float32);
// Llama 3 8B (h 4096, f 14336, 32 heads, 8 kv-heads) keeps 4h replicated,
// 4h + 4f split (k and v repeated to 32 heads) and, eager, 32 x 8192
// probabilities per token; flash keeps none of those.
TEST(LayoutActivations, DtbenchsDecodersWithoutDropout) {
  const auto g = gpt(256, 4, 64);
  const auto a = block_activations(g, 4, false);
  EXPECT_DOUBLE_EQ(a.replicated + a.split + a.core, 4 * (16 * 256 + 4 * 64));
  DecoderShape llama;
  llama.swiglu = true;
  llama.layers = 32;
  llama.hidden = 4096;
  llama.heads = 32;
  llama.kv_heads = 8;
  llama.ffn = 14336;
  llama.seq = 8192;
  const auto b = block_activations(llama, 2, false);
  EXPECT_DOUBLE_EQ(b.replicated, 32768);
  EXPECT_DOUBLE_EQ(b.split, 2 * (4 * 4096 + 4 * 14336));  // 147,456
  EXPECT_DOUBLE_EQ(b.core, 2 * 32 * 8192);                // 524,288
  EXPECT_DOUBLE_EQ(block_activations(llama, 2, true).core, 0);
}

TEST(LayoutPipeline, MicrobatchesInFlightAndBubble) {
  LayoutOptions l;
  l.pp = 4;
  l.microbatches = 8;
  l.schedule = PpSchedule::k1f1b;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(l, 0), 4);  // P - rank
  EXPECT_DOUBLE_EQ(microbatches_in_flight(l, 3), 1);
  EXPECT_DOUBLE_EQ(bubble_fraction(l), 3.0 / 11);      // (P-1)/(M+P-1)
  l.microbatches = 2;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(l, 0), 2);  // never more than M
  l.schedule = PpSchedule::kGpipe;
  l.microbatches = 8;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(l, 3), 8);  // every microbatch's forward before the first backward
  // Interleaved, v = 2: rank 0's warm-up 2(P-1) + (v-1)P = 10 chunks, the
  // 11th in flight: 11 chunks of L/8 layers = L(1 + (P-1)/(vP)) = 1.375 L,
  // i.e. 5.5 microbatches of the rank's L/4 layers. Bubble (P-1)/v over
  // M + (P-1)/v slots.
  l.schedule = PpSchedule::kInterleaved1f1b;
  l.stages_per_rank = 2;
  EXPECT_DOUBLE_EQ(microbatches_in_flight(l, 0), 5.5);
  EXPECT_DOUBLE_EQ(microbatches_in_flight(l, 3), 2.5);  // 2·0 + 4 + 1 = 5 chunks
  EXPECT_DOUBLE_EQ(bubble_fraction(l), 1.5 / 9.5);
  l.pp = 1;
  EXPECT_DOUBLE_EQ(bubble_fraction(l), 0);
  EXPECT_EQ(stage_blocks(126, 8), (std::vector<int>{16, 16, 16, 16, 16, 16, 15, 15}));
  EXPECT_EQ(stage_blocks(4, 1), (std::vector<int>{4}));
}

// A 4-block GPT (h 64, 4 heads, vocabulary 100, 8 tokens, batch 4) on pp 2
// GPipe with 4 microbatches, ddp on dp 1, float32: units of 0.2 of the
// compute each (the head's with the last stage), forward 1 s, backward 2 s.
//   stage 0: 2 blocks, 0.4 of the compute; stage 1: 2 blocks + head, 0.6
//   work per microbatch on stage 1: 3 s x 0.6 / 4 = 0.45 s, plus a send
//     forward and one backward of 2 tokens x 8 x 64 x 4 B = 2,048 B at
//     1 GB/s: 2 x 2.048 us
//   iteration: (M + P - 1) = 5 slots x 0.450004096 = 2.25002048 s
//   bubble: 1 slot; transfers: 4 x 2 x 2.048 us
//   activations, stage 1: 2 blocks x (16h + as = 1,056 elements = 4,224 B)
//     per token x 8 tokens x 4 in flight = 270,336, plus the logits and
//     log-probabilities of all 4 microbatches (GPipe runs every forward
//     and loss before the first backward): 4 x 100 x (4 + 4) B x 8 tokens
//     = 25,600: 295,936
// 2 ranks in one node (1 GB/s, no latency) as pp 2 under GPipe, M = 4.
ProjectOptions gpipe_on_two_ranks() {
  ProjectOptions o;
  o.world_sizes = {2};
  o.net.ranks_per_node = 2;
  o.net.intra.bus_bw = 1e9;
  o.layout.pp = 2;
  o.layout.microbatches = 4;
  o.layout.schedule = PpSchedule::kGpipe;
  return o;
}

TEST(LayoutProjection, PipelineWorkedByHand) {
  const auto p = small_profile();
  auto o = gpipe_on_two_ranks();
  const auto rows = project(p, o);
  ASSERT_EQ(rows.size(), 1u);
  const auto& r = rows[0];
  EXPECT_EQ(r.dp, 1);
  EXPECT_EQ(r.pp, 2);
  EXPECT_NEAR(r.iteration_s, 2.25002048, 1e-12);
  EXPECT_NEAR(r.bubble_s, 0.450004096, 1e-12);
  EXPECT_NEAR(r.pp_comm_s, 8 * 2.048e-6, 1e-15);
  EXPECT_DOUBLE_EQ(r.tp_comm_s, 0);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].blocks, 2);
  EXPECT_DOUBLE_EQ(r.stages[0].memory.activations, 270336);
  // Stage 1 adds, per token of the 8 of a microbatch, the vocabulary of 100
  // as GPipe's 4 microbatches of float32 log-probabilities and one of logits:
  // 100 x (4 x 4 + 4) x 8 = 16,000.
  EXPECT_DOUBLE_EQ(r.stages[1].memory.activations, 270336 + 16000);
  EXPECT_DOUBLE_EQ(r.memory.activations, 270336 + 16000);
  // tokens per rank: 4 x 8 per iteration over tp x pp = 2 ranks.
  EXPECT_NEAR(r.tokens_per_s_per_rank, 32 / r.iteration_s / 2, 1e-9);
  // Full recomputation: one more forward of the blocks (0.4 of the 1 s
  // forward on stage 1) in the slowest stage's work.
  o.layout.recompute = Recompute::kFull;
  const auto full = project(p, o).front();
  EXPECT_NEAR(full.recompute_s, 0.4, 1e-12);
  EXPECT_NEAR(full.iteration_s, 5 * (2.2 / 4 + 2 * 2.048e-6), 1e-12);
  // Stage 1 keeps each block's input (h = 64 floats per token) and one
  // block's whole working set while it recomputes.
  EXPECT_DOUBLE_EQ(full.stages[1].memory.activations, 2 * 256 * 8 * 4 + 4224 * 8 + 16000);
  // 1F1B's last stage runs each backward right after its forward: one
  // microbatch of logits, and P - rank = 1 microbatch of blocks in flight.
  o.layout.schedule = PpSchedule::k1f1b;
  o.layout.recompute = Recompute::kNone;
  EXPECT_DOUBLE_EQ(project(p, o).front().stages[1].memory.activations, 2 * 4224 * 8 + 6400);
}

// A measured pipeline row is set beside the projection of the same degree,
// schedule, microbatches and chunks, and beside no other.
TEST(LayoutProjection, MeasuredPipelineRowsMatchTheirSchedule) {
  auto p = small_profile();
  MeasuredRow m{"sync", 2, 2.5, 9e5, 0, 0, 1, "none", "none"};
  m.pp = 2;
  m.pp_schedule = "gpipe";
  m.microbatches = 4;
  p.measured = {m};
  auto o = gpipe_on_two_ranks();
  const auto same = project(p, o).front();
  ASSERT_TRUE(same.measured_s.has_value());
  EXPECT_DOUBLE_EQ(*same.measured_s, 2.5);
  EXPECT_DOUBLE_EQ(*same.measured_peak_bytes, 9e5);
  o.layout.schedule = PpSchedule::k1f1b;
  EXPECT_FALSE(project(p, o).front().measured_s.has_value());
  o.layout.schedule = PpSchedule::kGpipe;
  o.layout.microbatches = 2;
  EXPECT_FALSE(project(p, o).front().measured_s.has_value());
  o.layout.pp = 1;  // the data-parallel projection of 2 ranks: not a pipeline's row
  o.layout.microbatches = 1;
  EXPECT_FALSE(project(p, o).front().measured_s.has_value());
}

// The same model on tp 2 inside a node (1 GB/s, no latency), dp 1: the
// blocks' compute halves, the replicated head's does not (3 s x (0.8/2 +
// 0.2) = 1.8 s); each block's 4 allreduces of 32 tokens x 64 x 4 B = 8,192 B
// are a ring of 2 (8,192 B x 2(N-1)/N at 1 GB/s = 8.192 us): 4 blocks x 4
// x 8.192 us exposed. Activations: 4h + (12h + as)/2 per token of a block
// (1,024 + 3,200/2 B), the logits whole (replicated head).
TEST(LayoutProjection, TensorParallelWorkedByHand) {
  const auto p = small_profile();
  ProjectOptions o;
  o.world_sizes = {2};
  o.net.ranks_per_node = 2;
  o.net.intra.bus_bw = 1e9;
  o.layout.tp = 2;
  const auto r = project(p, o).front();
  EXPECT_NEAR(r.tp_comm_s, 16 * 8.192e-6, 1e-15);
  EXPECT_NEAR(r.iteration_s, 1.8 + 16 * 8.192e-6, 1e-12);
  EXPECT_DOUBLE_EQ(r.memory.activations, 4 * (1024 + 1600) * 32 + 800 * 32);
  // With loss_parallel the head's compute and logits split too.
  o.layout.loss_parallel = true;
  const auto lp = project(p, o).front();
  EXPECT_NEAR(lp.iteration_s, 1.5 + 16 * 8.192e-6, 1e-12);
  EXPECT_DOUBLE_EQ(lp.memory.activations, 4 * (1024 + 1600) * 32 + 400 * 32);
}


// Known by construction: with one rank per node (tp 1 only) and ddp's 16
// bytes of float32 states per parameter (SGD), 2 ranks fit a limit between
// the pipeline's stage (half the parameters) and the whole model only with
// pp 2; with no limit to speak of, pp 1 (no bubble) is faster.
TEST(LayoutSearch, AModelThatFitsOnlyWithAPipeline) {
  const auto p = small_profile(1000);
  ProjectOptions base;
  base.net.ranks_per_node = 1;
  base.net.inter.bus_bw = 1e12;
  SearchOptions s;
  s.world = 2;
  s.strategies = {Strategy::kDdp};
  s.memory_limit = 1e12;
  auto wide = search_layouts(p, base, s);
  ASSERT_FALSE(wide.best.empty());
  EXPECT_EQ(wide.best.front().options.layout.pp, 1);
  auto every = s;
  every.top = 1000;
  double pp1_least = 1e300, pp2_most = 0;
  for (const auto& r : search_layouts(p, base, every).best) {
    if (r.options.layout.pp == 1) pp1_least = std::min(pp1_least, r.row.memory.total());
    else pp2_most = std::max(pp2_most, r.row.memory.total());
  }
  ASSERT_LT(pp2_most, pp1_least);  // every pipelined layout holds less than any unpipelined one
  s.memory_limit = (pp2_most + pp1_least) / 2;
  const auto tight = search_layouts(p, base, s);
  ASSERT_FALSE(tight.best.empty());
  for (const auto& r : tight.best) EXPECT_EQ(r.options.layout.pp, 2);
  // Below every layout's figure: none fits, and the smallest is named.
  s.memory_limit = 1;
  const auto none = search_layouts(p, base, s);
  EXPECT_TRUE(none.best.empty());
  ASSERT_EQ(none.smallest.size(), 1u);
  EXPECT_GT(none.smallest.front().row.memory.total(), 1);
}

// Two nodes of two ranks. Over a fast fabric the data-parallel layouts win
// (no bubble, no TP collectives). Over a 1 MB/s fabric the 4 MB of
// gradients must stay inside the nodes: the best layout puts the pipeline
// across them (pp 2: each stage's dp x tp group is one node), and only its
// microbatches' activations cross.
TEST(LayoutSearch, ASlowFabricKeepsDataParallelismInsideTheNode) {
  const auto p = small_profile(1000);
  ProjectOptions base;
  base.net.ranks_per_node = 2;
  base.net.intra.bus_bw = 1e12;
  base.net.inter.bus_bw = 1e12;
  SearchOptions s;
  s.world = 4;
  s.strategies = {Strategy::kDdp, Strategy::kFsdp};
  s.memory_limit = 1e12;
  const auto fast = search_layouts(p, base, s);
  ASSERT_FALSE(fast.best.empty());
  EXPECT_EQ(fast.best.front().options.layout.pp, 1);
  EXPECT_EQ(fast.best.front().options.layout.tp, 1);
  base.net.inter.bus_bw = 1e6;
  const auto slow = search_layouts(p, base, s);
  ASSERT_FALSE(slow.best.empty());
  EXPECT_EQ(slow.best.front().options.layout.pp, 2) << slow.best.front().options.layout.describe();
  EXPECT_EQ(slow.best.front().row.dp * slow.best.front().options.layout.tp, 2);
}

// Context parallelism, cp 2 on one node (1 MB/s, no latency), dp 1: each rank
// holds 16 of the 32 tokens and computes half the 3 s. In each block ring
// attention passes the rank's keys and values (2 x 16 tokens x 64 x 4 B =
// 8,192 B: 8.192 ms) once forward and twice the bytes backward, against
// 1/cp of the block's attention core: 1 s x 0.2 (a block's forward) x
// 1,024/50,176 (2hs of 4h^2 + 2hf + 2hs multiply-adds per token) / cp,
// over cp = 1.0204 ms. Exposed: 4 blocks x ((8.192 - 1.0204) + 2 x (8.192 -
// 1.0204)) ms.
TEST(LayoutProjection, ContextParallelWorkedByHand) {
  const auto p = small_profile();
  ProjectOptions o;
  o.world_sizes = {2};
  o.net.ranks_per_node = 2;
  o.net.intra.bus_bw = 1e6;
  o.layout.cp = 2;
  const auto r = project(p, o).front();
  const double core_per_step = 0.2 * 1024.0 / 50176 / 2 / 2;
  const double cp = 4 * 3 * (8.192e-3 - core_per_step);
  EXPECT_EQ(r.cp, 2);
  EXPECT_EQ(r.dp, 1);
  EXPECT_NEAR(r.cp_comm_s, cp, 1e-12);
  EXPECT_NEAR(r.iteration_s - r.exposed_s, 1.5 + cp, 1e-12);  // the strategy's allreduce runs over dp x cp = 2 ranks
  EXPECT_NEAR(r.tokens_per_s_per_rank, 32 / r.iteration_s / 2, 1e-9);
  // 16 tokens a rank: 4 blocks x 4,224 B, the logits and log-probabilities 800 B.
  EXPECT_DOUBLE_EQ(r.memory.activations, 4 * 4224 * 16 + 800 * 16);
  o.layout.cp = 3;
  o.world_sizes = {3};
  EXPECT_THROW(project(p, o), UsageError);  // 8 tokens are not 2 x 3 chunks
}

TEST(LayoutProjection, Refusals) {
  auto p = small_profile();
  ProjectOptions o;
  o.world_sizes = {6};
  o.net.ranks_per_node = 8;
  o.net.intra.bus_bw = 1e9;
  o.layout.tp = 4;
  EXPECT_THROW(project(p, o), UsageError);  // 6 ranks are not a multiple of tp 4
  o.world_sizes = {8};
  o.layout.tp = 8;
  EXPECT_THROW(project(p, o), UsageError);  // 4 heads
  o.layout.tp = 1;
  o.layout.pp = 5;
  EXPECT_THROW(project(p, o), UsageError);  // more stages than blocks
  o.layout.pp = 2;
  o.layout.microbatches = 3;
  EXPECT_THROW(project(p, o), UsageError);  // 3 does not divide the batch of 4
  o.layout.pp = 1;
  o.layout.microbatches = 2;
  EXPECT_THROW(project(p, o), UsageError);  // microbatches without a pipeline
  o.layout.microbatches = 1;
  o.layout.sequence_parallel = true;
  EXPECT_THROW(project(p, o), UsageError);  // SP without TP
  o.layout.sequence_parallel = false;
  o.layout.recompute = Recompute::kFull;
  p.decoder.reset();
  EXPECT_THROW(project(p, o), UsageError);  // recomputation needs a decoder's blocks
  EXPECT_THROW(parse_pp_schedule("zb"), UsageError);
  EXPECT_THROW(layout::parse_recompute("op"), UsageError);
}

}  // namespace
}  // namespace dtbench::project
