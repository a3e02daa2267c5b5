#pragma once
// Rewrites tensors of a single-file test checkpoint in place.

#include <ATen/ATen.h>

#include <filesystem>
#include <functional>
#include <string>

#include "draftgate/model/tensor_view.h"

namespace draftgate::testing {

// Replaces tensor `name` of `ckpt`'s model.safetensors by `edit(tensor)`.
void edit_tensor(const std::filesystem::path& ckpt, const std::string& name,
                 const std::function<at::Tensor(at::Tensor)>& edit);
// Replaces every tensor by `edit(name, tensor)`; an undefined result drops the tensor. F8 tensors
// are handed over as their bytes (kByte) and written back as F8 when they stay bytes.
void edit_tensors(const std::filesystem::path& ckpt,
                  const std::function<at::Tensor(const std::string&, at::Tensor)>& edit);

// The checkpoint's tensors (unquantised) after `edit`, which may add, drop or reorder them.
void edit_tensors(const std::filesystem::path& ckpt,
                  const std::function<void(io::NamedTensors&)>& edit);

}  // namespace draftgate::testing
