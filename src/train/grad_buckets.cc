#include "train/grad_buckets.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/types.h"
#include "core/error.h"
#include "train/wire_cast.h"

namespace dtbench::train {
namespace {

// float16 compression keeps the largest reduced value near 65504 / 16: the
// headroom covers ranks whose own gradients are larger than the average.
constexpr double kFp16Max = 65504.0;
constexpr double kFp16Target = kFp16Max / 16;
constexpr double kMinScale = 0x1p-24, kMaxScale = 0x1p24;

// The power of two that brings `max_abs` to kFp16Target (kept within range).
double fp16_scale_for(double max_abs, double current) {
  if (!(max_abs > 0) || !std::isfinite(max_abs)) return current;
  const double s = std::exp2(std::floor(std::log2(kFp16Target / max_abs)));
  return std::clamp(s, kMinScale, kMaxScale);
}

}  // namespace

torch::Tensor slot_view(const torch::Tensor& flat, int64_t offset, const torch::Tensor& p) {
  if (p.is_non_overlapping_and_dense())
    return flat.as_strided(p.sizes(), p.strides(), offset);
  return flat.narrow(0, offset, p.numel()).view(p.sizes());
}

Compression parse_compression(const std::string& name) {
  if (name == "none") return Compression::kNone;
  if (name == "fp16") return Compression::kFp16;
  if (name == "bf16") return Compression::kBf16;
  throw UsageError(fmt::format("--compression '{}' is not one of none, fp16, bf16", name));
}

double CompressionStats::rel_l2_error() const {
  return sum_sq_exact > 0 ? std::sqrt(sum_sq_error / sum_sq_exact) : 0;
}

GradBuckets::GradBuckets(std::vector<torch::Tensor> params,
                         std::vector<std::vector<size_t>> assignment, comm::Communicator& comm,
                         Compression compression, trace::TrainObserver& observer)
    : params_(std::move(params)), assignment_(std::move(assignment)), comm_(comm),
      compression_(compression), observer_(observer) {
  stats_.dtype = compression == Compression::kFp16   ? "fp16"
                 : compression == Compression::kBf16 ? "bf16"
                                                     : "none";
  bf16_gather_ = compression == Compression::kBf16 &&
                 !comm_.unsupported_reason(comm::Collective::kAllreduce, comm::DType::kBFloat16,
                                           comm::ReduceOp::kSum)
                      .empty();
  bucket_of_.assign(params_.size(), 0);
  slot_of_.assign(params_.size(), 0);
  for (std::size_t b = 0; b < assignment_.size(); ++b) {
    Bucket bucket;
    int64_t numel = 0;
    for (std::size_t k = 0; k < assignment_[b].size(); ++k) {
      const std::size_t i = assignment_[b][k];
      DTBENCH_CHECK(i < params_.size(), "bucket assignment names a parameter out of range");
      bucket.params.push_back(i);
      bucket.offsets.push_back(numel);
      bucket_of_[i] = b;
      slot_of_[i] = k;
      numel += params_[i].numel();
    }
    const auto& first = params_[assignment_[b].front()];
    bucket.flat = torch::zeros({numel}, first.options().requires_grad(false));
    if (compression_ != Compression::kNone)
      bucket.wire = torch::zeros(
          {numel}, bucket.flat.options().dtype(compression_ == Compression::kFp16 ? torch::kHalf
                                                                                  : torch::kBFloat16));
    if (bf16_gather_) bucket.gathered = torch::zeros({comm_.size() * numel}, bucket.wire.options());
    torch::NoGradGuard no_grad;
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      auto& p = params_[bucket.params[k]];
      auto view = slot_view(bucket.flat, bucket.offsets[k], p);
      if (p.grad().defined()) view.copy_(p.grad());
      p.mutable_grad() = view;
      bucket.views.push_back(std::move(view));
    }
    bucket.pending = bucket.params.size();
    buckets_.push_back(std::move(bucket));
  }
}

bool GradBuckets::add_gradient(std::size_t i) {
  auto& bucket = buckets_[bucket_of_[i]];
  const auto& g = params_[i].grad();
  if (!g.defined())
    throw CommError(fmt::format("parameter {} has no gradient after its backward hook", i));
  const auto& view = bucket.views[slot_of_[i]];
  if (!g.is_same(view)) {
    torch::NoGradGuard no_grad;
    view.copy_(g);
  }
  DTBENCH_CHECK(bucket.pending > 0, "gradient of one parameter reported twice in one backward");
  return --bucket.pending == 0;
}

void GradBuckets::fill(std::size_t b) {
  for (std::size_t i : buckets_[b].params) add_gradient(i);
}

void GradBuckets::launch(std::size_t b) {
  DTBENCH_CHECK(b == next_launch_, "buckets must be launched in order");
  auto& bucket = buckets_[b];
  const int index = static_cast<int>(b);
  if (compression_ == Compression::kNone) {
    observer_.collective_launch(index, bucket.flat.numel() * 4, trace::WireDType::kFloat32, bucket.params);
    bucket.work = comm_.allreduce(bucket.flat, bucket.flat, comm::ReduceOp::kSum);
    observer_.collective_returned(index);
  } else {
    // Pre-divided by the world size (as PyTorch's fp16 hook does), so the sum
    // is the average and cannot grow past the largest input; float16 is also
    // scaled so that average sits high in its range.
    torch::NoGradGuard no_grad;
    const double factor = bucket.scale / comm_.size();
    observer_.cast_begin(index);
    to_wire(bucket.flat, bucket.wire, static_cast<float>(factor));
    observer_.cast_end(index);
    observer_.collective_launch(
        index, bucket.wire.numel() * 2,
        compression_ == Compression::kFp16 ? trace::WireDType::kFloat16 : trace::WireDType::kBFloat16,
        bucket.params);
    if (bf16_gather_) {
      // A pure byte transport: the 16-bit words travel as float16 (which the
      // backend can move) and are never computed on in that type.
      auto out = bucket.gathered.view(torch::kHalf);
      bucket.work = comm_.allgather(bucket.wire.view(torch::kHalf), out);
    } else {
      bucket.work = comm_.allreduce(bucket.wire, bucket.wire, comm::ReduceOp::kSum);
    }
    observer_.collective_returned(index);
    if (probe_) {
      bucket.exact = bucket.flat.clone();
      bucket.exact_work = comm_.allreduce(bucket.exact, bucket.exact, comm::ReduceOp::kSum);
    }
  }
  if (observer_.active())
    bucket.work->on_done([o = &observer_, index] { o->collective_done(index); });
  ++next_launch_;
}

std::size_t GradBuckets::launch_ready() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_);
  return next_launch_;
}

void GradBuckets::finish_compressed(Bucket& bucket) {
  if (compression_ == Compression::kBf16) {
    if (bf16_gather_)
      sum_parts(bucket.gathered, comm_.size(), bucket.flat);
    else
      from_wire(bucket.wire, bucket.flat, 1.0f);
    return;
  }
  // Every rank holds the same reduced bytes, so every rank takes the same
  // branch below and picks the same next scale: no extra communication.
  stats_.min_scale = std::min(stats_.min_scale, bucket.scale);
  stats_.max_scale = std::max(stats_.max_scale, bucket.scale);
  const double wire_max = max_abs(bucket.wire);
  if (!std::isfinite(wire_max)) {
    // Overflowed in float16: reduce this bucket again in float32 (flat still
    // holds this rank's gradients) and lower the scale from the exact result.
    ++stats_.overflows;
    comm_.allreduce(bucket.flat, bucket.flat, comm::ReduceOp::kSum)->wait(comm_.timeout());
    bucket.flat.div_(static_cast<double>(comm_.size()));
    const double exact_max = bucket.flat.abs().max().item<double>();
    bucket.scale = std::min(bucket.scale / 2, fp16_scale_for(exact_max, bucket.scale / 2));
    return;
  }
  from_wire(bucket.wire, bucket.flat, static_cast<float>(1.0 / bucket.scale));
  // Aim the next iteration's average at kFp16Target. Growing too far costs
  // one float32 re-reduction (above), never a wrong step.
  bucket.scale = fp16_scale_for(wire_max / bucket.scale, bucket.scale);
}

void GradBuckets::record_probe(Bucket& bucket) {
  bucket.exact_work->wait(comm_.timeout());
  bucket.exact_work.reset();
  bucket.exact.div_(static_cast<double>(comm_.size()));
  add_compression_error(stats_, bucket.flat, bucket.exact);
  bucket.exact = torch::Tensor();
}

void GradBuckets::finish() {
  if (next_launch_ < buckets_.size()) {
    const auto& bucket = buckets_[next_launch_];
    throw CommError(fmt::format(
        "gradient bucket {} of {} never completed: {} of its parameters got no gradient in this "
        "backward (unused parameters are not supported by the overlap/sync reducers)",
        next_launch_, buckets_.size(), bucket.pending));
  }
  const double world = comm_.size();
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) {
    bucket.work->wait(comm_.timeout());
    bucket.work.reset();
    if (compression_ == Compression::kNone) {
      bucket.flat.div_(world);
    } else {
      const int index = static_cast<int>(&bucket - buckets_.data());
      observer_.cast_begin(index);
      finish_compressed(bucket);
      observer_.cast_end(index);
      if (bucket.exact_work) record_probe(bucket);
    }
    // The average is in the views; a gradient that is not one (replaced
    // since the last iteration) becomes one again.
    for (std::size_t k = 0; k < bucket.params.size(); ++k) {
      auto& p = params_[bucket.params[k]];
      if (!p.grad().is_same(bucket.views[k])) p.mutable_grad() = bucket.views[k];
    }
  }
}

void GradBuckets::reset() {
  for (auto& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
    bucket.exact_work.reset();
  }
  next_launch_ = 0;
}

}  // namespace dtbench::train
