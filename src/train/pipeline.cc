#include "train/pipeline.h"

#include <chrono>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/communicator.h"
#include "core/error.h"
#include "models/model.h"

namespace dtbench::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The tag of a transfer across the boundary after stage `from` (forward
// activations) or its gradient back across it, for microbatch `mb`.
int tag_of(int mb, int from, int stages, bool backward) { return (mb * stages + from) * 2 + (backward ? 1 : 0); }


}  // namespace

models::StageSpan stage_span(int64_t blocks, int stages, int stage) {
  const auto split = layout::stage_blocks(static_cast<int>(blocks), stages);
  DTBENCH_CHECK(stage >= 0 && stage < stages, "a stage outside the pipeline");
  models::StageSpan span;
  for (int s = 0; s < stage; ++s) span.first_block += split[static_cast<std::size_t>(s)];
  span.end_block = span.first_block + split[static_cast<std::size_t>(stage)];
  span.embedding = stage == 0;
  span.head = stage == stages - 1;
  return span;
}

Pipeline::Pipeline(const PipelineOptions& opts, std::vector<models::Model*> chunks, comm::Communicator& comm,
                   std::vector<int64_t> hidden)
    : opts_(opts), chunks_(std::move(chunks)), comm_(comm), hidden_(std::move(hidden)) {
  DTBENCH_CHECK(static_cast<int>(chunks_.size()) == opts_.chunks, "a rank's chunks are not --stages-per-rank");
  DTBENCH_CHECK(comm_.size() == opts_.stages && comm_.rank() == opts_.rank, "the pipeline group is not the mesh's");
  actions_ = layout::pipeline_actions(opts_.schedule, opts_.stages, opts_.rank, opts_.microbatches, opts_.chunks);
  module_ = std::make_shared<torch::nn::Module>("PipelineStages");
  for (std::size_t c = 0; c < chunks_.size(); ++c) module_->register_module(fmt::format("chunk{}", c), chunks_[c]->module());
}

double Pipeline::share_loss(double loss) {
  auto t = torch::tensor({holds_last_stage() ? loss : 0.0}, torch::kDouble);
  comm_.broadcast(t, t, last_stage_rank())->wait(comm_.timeout());
  return t.item<double>();
}

Pipeline::~Pipeline() = default;

int Pipeline::last_stage_rank() const { return opts_.stages - 1; }
bool Pipeline::holds_last_stage() const { return opts_.rank == last_stage_rank(); }

torch::Tensor Pipeline::run(const torch::Tensor& input, const torch::Tensor& target, trace::TrainObserver& observer) {
  const int p = opts_.stages, m = opts_.microbatches, v = opts_.chunks, stages = p * v;
  const auto timeout = comm_.timeout();
  last_ = {};
  const auto inputs = input.chunk(m, 0), targets = target.chunk(m, 0);
  // Per (microbatch, chunk): the stage's input (its gradient goes back) and
  // its output (or, on the last stage, its share of the loss).
  struct Slot {
    torch::Tensor in, out;
  };
  std::vector<Slot> slots(static_cast<std::size_t>(m * v));
  std::vector<std::pair<comm::WorkPtr, torch::Tensor>> sends;
  torch::Tensor loss;
  auto post = [&](const torch::Tensor& t, int dst, int tag) {
    auto sent = t.contiguous();
    sends.emplace_back(comm_.send(sent, dst, tag), sent);
    last_.bytes_sent += static_cast<int64_t>(sent.numel() * sent.element_size());
    ++last_.sends;
  };
  // Sends already done let their tensors go (a stage would otherwise keep
  // every microbatch's output alive to the end of the step).
  auto reap = [&] {
    for (auto it = sends.begin(); it != sends.end();) {
      if (!it->first->done()) {
        ++it;
        continue;
      }
      if (auto error = it->first->error()) std::rethrow_exception(error);
      it = sends.erase(it);
    }
  };
  // What an action receives (a forward's input from the previous stage, a
  // backward's output gradient from the next), posted one action ahead, as
  // torch.distributed.pipelining posts its receives with the sends before
  // it computes: the transfer then runs while this rank computes.
  struct Posted {
    torch::Tensor into;
    comm::WorkPtr work;
  };
  // Where the stages compute: float32 activations between them.
  const auto buffers = chunks_.front()->module()->parameters().front().options().dtype(torch::kFloat);
  auto post_receive = [&](std::size_t i) -> Posted {
    if (i >= actions_.size()) return {};
    const auto& a = actions_[i];
    const int stage = a.chunk * p + opts_.rank;
    Posted r;
    if (a.kind == layout::PpAction::kForward && stage > 0) {
      r.into = torch::empty(hidden_, buffers);
      r.work = comm_.recv(r.into, (stage - 1) % p, tag_of(a.microbatch, stage - 1, stages, false));
    } else if (a.kind == layout::PpAction::kBackward && stage < stages - 1) {
      r.into = torch::empty(hidden_, buffers);
      r.work = comm_.recv(r.into, (stage + 1) % p, tag_of(a.microbatch, stage, stages, true));
    }
    return r;
  };
  auto receive = [&](Posted& posted) {
    trace::PhaseScope phase(observer, trace::Phase::kCommWait);
    const auto t0 = Clock::now();
    posted.work->wait(timeout);
    last_.wait_s += seconds_since(t0);
    return posted.into;
  };
  Posted next = post_receive(0);
  for (std::size_t i = 0; i < actions_.size(); ++i) {
    const auto& a = actions_[i];
    Posted mine = std::move(next);
    next = post_receive(i + 1);
    const int stage = a.chunk * p + opts_.rank;
    auto& slot = slots[static_cast<std::size_t>(a.microbatch * v + a.chunk)];
    auto& model = *chunks_[static_cast<std::size_t>(a.chunk)];
    if (a.kind == layout::PpAction::kForward) {
      torch::Tensor x;
      if (stage == 0) {
        x = inputs[static_cast<std::size_t>(a.microbatch)];
      } else {
        x = receive(mine);
        x.requires_grad_(true);
      }
      const auto t0 = Clock::now();
      {
        trace::PhaseScope phase(observer, trace::Phase::kForward);
        if (stage == stages - 1) {
          slot.out = model.training_loss(x, targets[static_cast<std::size_t>(a.microbatch)]).to(torch::kFloat) / m;
          const auto part = slot.out.detach();
          loss = loss.defined() ? loss + part : part;
        } else {
          slot.out = model.forward(x).to(torch::kFloat);
        }
      }
      last_.forward_s += seconds_since(t0);
      if (stage < stages - 1) post(slot.out.detach(), (stage + 1) % p, tag_of(a.microbatch, stage, stages, false));
      if (stage > 0) slot.in = x;
    } else {
      torch::Tensor grad;
      if (stage < stages - 1) grad = receive(mine);
      const auto t0 = Clock::now();
      {
        trace::PhaseScope phase(observer, trace::Phase::kBackward);
        if (grad.defined())
          torch::autograd::backward({slot.out}, {grad});
        else
          slot.out.backward();
      }
      last_.backward_s += seconds_since(t0);
      if (stage > 0) post(slot.in.grad(), (stage - 1) % p, tag_of(a.microbatch, stage - 1, stages, true));
      slot = {};  // frees the microbatch's activations
    }
    reap();
  }
  {
    trace::PhaseScope phase(observer, trace::Phase::kCommWait);
    const auto t0 = Clock::now();
    for (auto& s : sends) s.first->wait(timeout);
    if (opts_.sum_tied_gradients) sum_tied_gradients(2 * m * stages);
    last_.wait_s += seconds_since(t0);
  }
  return loss;
}

void Pipeline::sum_tied_gradients(int first_tag) {
  // The first stage (chunk 0 of rank 0) and the last (chunk v-1 of rank
  // P-1) each hold the tied parameters; each adds the other's gradient.
  const int p = opts_.stages;
  models::Model* end = nullptr;
  int peer = -1;
  if (opts_.rank == 0) {
    end = chunks_.front();
    peer = p - 1;
  } else if (opts_.rank == p - 1) {
    end = chunks_.back();
    peer = 0;
  }
  if (end == nullptr || end->pp_seam() == nullptr) return;
  const auto tied = end->pp_seam()->tied_parameters();
  for (std::size_t i = 0; i < tied.size(); ++i) {
    auto g = tied[i].grad();
    DTBENCH_CHECK(g.defined(), "a tied parameter without a gradient after the step");
    auto mine = g.detach().clone();
    auto theirs = torch::empty_like(mine);
    const int tag = first_tag + static_cast<int>(i);  // above every transfer's (tag_of)
    auto sent = comm_.send(mine, peer, tag);
    comm_.recv(theirs, peer, tag)->wait(comm_.timeout());
    sent->wait(comm_.timeout());
    last_.bytes_sent += static_cast<int64_t>(mine.numel() * mine.element_size());
    ++last_.sends;
    torch::NoGradGuard no_grad;
    g.add_(theirs);
  }
}

}  // namespace dtbench::train
