#pragma once
// A pipeline step (--pp): this rank's stages of the model run the
// schedule's actions (layout/pipeline_schedule.h) over the local batch cut
// into microbatches, activations sent to the next stage and their gradients
// back to the previous one point-to-point over the pipeline group, as
// torch.distributed.pipelining's PipelineStage and schedules do. Sends are
// posted without waiting (the schedule's receives would otherwise deadlock
// against them) and all waited for at the end of the step; a receive waits
// where its action needs it, and that wait is the stage's measured bubble.
// The last stage's loss is each microbatch's mean over its tokens divided by
// the microbatch count, so the gradients accumulated over the step are the
// whole batch's, as one process computes them.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "layout/pipeline_schedule.h"
#include "models/pipeline_split.h"
#include "trace/observer.h"

namespace dtbench::comm {
class Communicator;
}
namespace dtbench::models {
class Model;
}

namespace dtbench::train {

struct PipelineOptions {
  layout::PpSchedule schedule = layout::PpSchedule::k1f1b;
  int stages = 1;        // P: ranks of the pipeline group
  int rank = 0;          // this rank's place in it
  int microbatches = 1;  // M
  int chunks = 1;        // v: stages per rank (interleaved-1f1b)
  // Sum the tied parameters' gradients between the first and the last
  // stage (models::PpSeam::tied_parameters). Off only in the equivalence
  // test's negative control, which shows a pipeline without it trains
  // another model.
  bool sum_tied_gradients = true;
};

// Stage `stage` of a model whose `blocks` are split by layout::stage_blocks
// into `stages` stages: its blocks, and whether it holds the embedding
// (stage 0) and the head (the last).
models::StageSpan stage_span(int64_t blocks, int stages, int stage);

// What one step did, by the host clock.
struct PipelineStepTimes {
  double forward_s = 0;   // in forward actions' compute
  double backward_s = 0;  // in backward actions' compute
  double wait_s = 0;      // waiting on receives and, at the end, on sends: the bubble and the transfers
  int64_t bytes_sent = 0;  // activations, their gradients and the tied parameters' gradients
  int sends = 0;
};

class Pipeline {
 public:
  // `chunks[c]` is stage c · P + rank of the model (models::PpSeam cut);
  // `hidden` the shape of one microbatch's activations between stages
  // ([batch / M, seq, width], float32). `comm` is the pipeline group: its
  // rank r holds stages r, r + P, ...
  Pipeline(const PipelineOptions& opts, std::vector<models::Model*> chunks, comm::Communicator& comm,
           std::vector<int64_t> hidden);
  ~Pipeline();

  // One step's forwards and backwards over the local batch, gradients
  // accumulated in the stages' parameters; then the tied parameters'
  // gradients summed between the first and the last stage. Returns the
  // step's loss on the rank that holds the last stage (undefined elsewhere).
  torch::Tensor run(const torch::Tensor& input, const torch::Tensor& target,
                    trace::TrainObserver& observer = trace::null_observer());

  // Every chunk's module, as one module (children chunk0, chunk1, ...): what
  // the data-parallel strategy and the optimizer keep in step.
  torch::nn::Module& module() { return *module_; }
  const std::vector<models::Model*>& chunks() const { return chunks_; }
  // `loss` of the rank holding the last stage, on every rank of the group.
  double share_loss(double loss);

  const PipelineStepTimes& last_step() const { return last_; }
  const std::vector<layout::PpAction>& actions() const { return actions_; }
  bool holds_last_stage() const;
  // The pipeline rank that holds the last stage.
  int last_stage_rank() const;

 private:
  // Tags from `first_tag` up: above the step's transfers'.
  void sum_tied_gradients(int first_tag);

  PipelineOptions opts_;
  std::vector<models::Model*> chunks_;
  comm::Communicator& comm_;
  std::vector<int64_t> hidden_;
  std::vector<layout::PpAction> actions_;
  std::shared_ptr<torch::nn::Module> module_;
  PipelineStepTimes last_;
};

}  // namespace dtbench::train
