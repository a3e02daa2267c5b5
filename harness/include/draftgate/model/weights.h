#pragma once
// Loads named weights from a checkpoint with their shapes checked, as zero-copy views when the
// stored dtype and device already match, converted otherwise. For training, a loader given a
// ParameterMap hands out owned, writable copies instead and records each under its checkpoint name.

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"

namespace draftgate::model {

// Checkpoint tensor name -> the model's tensor (the same storage the model computes with).
using ParameterMap = std::map<std::string, at::Tensor>;

class WeightLoader {
 public:
  WeightLoader(const io::Checkpoint& checkpoint, at::ScalarType dtype, at::Device device,
               ParameterMap* owned = nullptr);

  // The tensor `name` with exactly `shape`, in the loader's dtype and device. Throws
  // draftgate::Error naming the checkpoint and tensor when it is missing, quantised, or shaped
  // differently.
  at::Tensor get(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // Same, but keeps float32 (parameters the reference computes in float32, e.g. A_log).
  at::Tensor get_f32(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // The stored tensor as a zero-copy view of the mapping, checked like get() except for its
  // values, which the caller checks slice by slice with require_finite: for tensors read a slice
  // at a time (a streamed embedding, lm_head in vocabulary blocks).
  at::Tensor mapped(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // The error get() raises when `values` (a slice of tensor `name`) hold NaN or Inf.
  void require_finite(const std::string& name, const at::Tensor& values) const;

 private:
  at::Tensor checked(const std::string& name, const std::vector<std::int64_t>& shape) const;
  at::Tensor hand_out(const std::string& name, at::Tensor converted) const;

  const io::Checkpoint& checkpoint_;
  at::ScalarType dtype_;
  at::Device device_;
  ParameterMap* owned_;
};

}  // namespace draftgate::model
