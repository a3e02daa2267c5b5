#pragma once
// Loads named weights from a checkpoint with their shapes checked, as zero-copy views when the
// stored dtype and device already match, converted otherwise. For training, a loader given a
// ParameterMap hands out owned, writable copies instead and records each under its checkpoint name;
// a loader given WeightBuffers converts into reused buffers (a streamed forward's layers), and one
// given StagedTensors reads the tensors staged there from memory instead of the mapping.
// An F8_E4M3 weight of a fine-grained FP8 checkpoint (io/fp8_scheme.h) — a linear's 2-D weight or
// a fused experts tensor [experts, out, in] with blocks per expert — is dequantized to float32
// when it is read — one tensor at a time, so a streamed forward holds one layer's copy only — and
// then converted like any other.

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/fp8_scheme.h"
#include "draftgate/model/staged_tensors.h"
#include "draftgate/model/weight_buffers.h"

namespace draftgate::model {

// Checkpoint tensor name -> the model's tensor (the same storage the model computes with).
using ParameterMap = std::map<std::string, at::Tensor>;

class WeightLoader {
 public:
  WeightLoader(const io::Checkpoint& checkpoint, at::ScalarType dtype, at::Device device,
               ParameterMap* owned = nullptr, WeightBuffers* reuse = nullptr,
               const StagedTensors* staged = nullptr);

  // The tensor `name` with exactly `shape`, in the loader's dtype and device. Throws
  // draftgate::Error naming the checkpoint and tensor when it is missing, quantised by another
  // method, shaped differently, or FP8 without valid block scales.
  at::Tensor get(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // A linear weight, multiplied only by dense(): as get(), except that a float32 loader over a
  // bf16 checkpoint keeps it bf16 as stored (checked finite) — dense() multiplies float32 by bf16
  // with exact products — so a float32 forward holds and reads half the bytes. A training loader
  // (owned copies) converts as get() does.
  at::Tensor get_linear(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // Whether get_linear keeps a bf16 weight as stored: a float32 CPU loader that hands out no
  // copies.
  bool keeps_linear_bf16() const;
  // Whether the checkpoint stores a tensor `name` (a layer that reads one of two layouts).
  bool contains(const std::string& name) const { return checkpoint_.contains(name); }
  // The checkpoint's directory, for errors about how its tensors fit together.
  std::string checkpoint_dir() const { return checkpoint_.dir().string(); }
  // Slice `index` of the first dimension of linear weights stacked in tensor `name` (an expert of
  // a fused experts tensor), the whole tensor checked as get() checks it against `shape`, only
  // the slice read, converted (or dequantized) and checked finite; kept bf16 as stored where
  // get_linear keeps a weight so. Not for a loader that hands out owned copies.
  at::Tensor get_linear_slice(const std::string& name, const std::vector<std::int64_t>& shape,
                              std::int64_t index) const;
  // Same, but keeps float32 (parameters the reference computes in float32, e.g. A_log).
  at::Tensor get_f32(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // The stored tensor as a zero-copy view of the mapping, checked like get() except for its
  // values, which the caller checks slice by slice with require_finite: for tensors read a slice
  // at a time (a streamed embedding, lm_head in vocabulary blocks).
  at::Tensor mapped(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // The error get() raises when `values` (a slice of tensor `name`) hold NaN or Inf.
  void require_finite(const std::string& name, const at::Tensor& values) const;
  // `values` (tensor `name` as mapped, or a slice of it) checked finite, in the loader's dtype and
  // device: itself when it is already, else converted into a reused buffer where the loader has
  // them.
  at::Tensor converted(const std::string& name, const at::Tensor& values) const;
  // converted() for rows of a linear weight multiplied only by dense() (lm_head in vocabulary
  // blocks): a float32 loader keeps bf16 values as stored, checked finite, as get_linear does.
  at::Tensor converted_linear(const std::string& name, const at::Tensor& values) const;

 private:
  at::Tensor checked(const std::string& name, const std::vector<std::int64_t>& shape) const;
  // The stored tensor: staged, else a view of the mapping.
  at::Tensor stored_tensor(const std::string& name) const;
  at::Tensor hand_out(const std::string& name, at::Tensor converted) const;
  [[noreturn]] void throw_non_finite(const std::string& name) const;
  // The float32 weight of an FP8 tensor, its scheme, dtype, module and scales checked.
  // With `index`, only that slice of the first dimension (its codes and its grid of scales).
  at::Tensor dequantized(const std::string& name, const std::vector<std::int64_t>& shape,
                         const io::TensorInfo& info,
                         std::optional<std::int64_t> index = std::nullopt) const;

  const io::Checkpoint& checkpoint_;
  std::optional<io::Fp8Scheme> fp8_;
  at::ScalarType dtype_;
  at::Device device_;
  ParameterMap* owned_;
  WeightBuffers* reuse_;
  const StagedTensors* staged_;
};

}  // namespace draftgate::model
