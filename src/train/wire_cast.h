#pragma once
// The casts of gradient compression (train/grad_buckets): a bucket's float32
// gradients into its 16-bit wire format and back, fused with the scaling
// that compression applies. On the CPU, where it has AVX2 and F16C, own
// vector loops do it: LibTorch 1.13's float16/bfloat16 CPU kernels are scalar
// (resnet50, 2 ranks: 340 ms of casts per iteration against 78 ms on 2.11,
// docs/PERFORMANCE.md). Elsewhere (CUDA tensors, other CPUs) LibTorch's own
// ops do it. Both give the same bits (tests/train/wire_cast_test.cc).
#include <ATen/core/Tensor.h>

#include "trace/observer.h"
#include "train/compression.h"

namespace dtbench::train {

// kAuto: the vector loops where they apply; kTorch: always LibTorch's ops.
enum class CastPath { kAuto, kTorch };

// Whether kAuto has vector loops on this machine (x86-64 with AVX2 + F16C).
bool vector_casts_available();

// wire = flat * factor, rounded to wire's dtype (kHalf or kBFloat16, to
// nearest even). `flat` float32; both contiguous, same number of elements.
void to_wire(const at::Tensor& flat, const at::Tensor& wire, float factor,
             CastPath path = CastPath::kAuto);

// flat = float(wire) * factor.
void from_wire(const at::Tensor& wire, const at::Tensor& flat, float factor,
               CastPath path = CastPath::kAuto);

// The largest |x| of a float16/bfloat16 tensor; +infinity if any element is
// infinite or NaN.
double max_abs(const at::Tensor& wire, CastPath path = CastPath::kAuto);

// flat = the sum over r of float(gathered[r]), gathered holding `ranks`
// equal parts one after another (an allgather's output), summed in rank
// order.
void sum_parts(const at::Tensor& gathered, int ranks, const at::Tensor& flat,
               CastPath path = CastPath::kAuto);

// The compression probe's figures (CompressionStats): adds one comparison
// of `got` (the averaged gradient that went over the wire compressed, any
// float dtype) with `exact` (the same average reduced in float32).
void add_compression_error(CompressionStats& stats, const at::Tensor& got, const at::Tensor& exact);

// The wire format of a tensor that goes into a collective, for the
// observer (--trace): what the tensor really is, float32 unless 16-bit.
trace::WireDType wire_dtype_of(const at::Tensor& t);

}  // namespace dtbench::train
