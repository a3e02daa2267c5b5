#pragma once
// Destinations reused for converted weights. A streamed forward converts every layer's weights
// (bf16 to float32 for the checks' float32 compute) as it reaches the layer; into fresh tensors,
// each conversion is a new mapping of hundreds of MB that the kernel must fault in and zero — on a
// Qwen3.6-27B-shaped target that was ~45 % of the run's CPU time. Here a layer's weights go into
// the buffers the previous layer of that shape has let go.

#include <ATen/ATen.h>

#include <vector>

namespace draftgate::model {

class WeightBuffers {
 public:
  // A tensor of `shape`, `dtype` and `device` that nobody else holds: a kept buffer whose last
  // user (tensor or view) is gone, else a new one, kept from now on.
  at::Tensor take(at::IntArrayRef shape, at::ScalarType dtype, at::Device device);
  std::size_t size() const { return buffers_.size(); }

 private:
  std::vector<at::Tensor> buffers_;
};

// Whether every value of `t` is finite, read in one pass without allocating (a bool tensor the
// size of a 17408 x 5120 weight is 89 MB of fresh pages).
bool all_finite(const at::Tensor& t);

// Whether n values of `dtype` (bf16, f16 or float32; false for any other) at `data` are all finite,
// on the calling thread alone.
bool values_finite(const void* data, std::int64_t n, at::ScalarType dtype);

// dst.copy_(src), returning whether every value of src is finite: one pass over both for a
// contiguous bf16 src and float32 dst (the streamed float32 forward's case), else copy then check.
bool copy_checking_finite(at::Tensor& dst, const at::Tensor& src);

}  // namespace draftgate::model
