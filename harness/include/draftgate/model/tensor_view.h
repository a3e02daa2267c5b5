#pragma once
// ATen views of safetensors data, and writing ATen tensors back out.

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/io/safetensors.h"

namespace draftgate::io {

// The ATen dtype of a safetensors dtype, or nullopt when this libtorch has none (F8_*,
// U16/U32/U64).
std::optional<at::ScalarType> aten_dtype(DType dtype);
// The safetensors dtype of an ATen dtype; throws draftgate::Error for types safetensors cannot
// hold.
DType safetensors_dtype(at::ScalarType type);

// Zero-copy, read-only view of one tensor (the tensor keeps `file`'s mapping alive). Dtypes without
// an ATen type come back as raw bytes: kByte with the tensor's shape plus a trailing [element size]
// dimension (F8 has element size 1, so F8 keeps its shape). Misaligned data is copied instead of
// viewed. Never write into a view.
at::Tensor tensor_view(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info);
// The same view of `info`'s stored `bytes` held elsewhere (a tensor read into memory), keeping
// `owner` alive while the view lives.
at::Tensor tensor_view(std::string_view bytes, const TensorInfo& info,
                       std::shared_ptr<const void> owner);

// Zero-copy view of a checkpoint tensor by name (draftgate::Error when absent or metadata-only).
at::Tensor load_tensor(const Checkpoint& checkpoint, std::string_view name);

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Writes CPU copies of `tensors` atomically (see write_safetensors).
void write_tensors(const std::filesystem::path& path, const NamedTensors& tensors,
                   const std::map<std::string, std::string>& metadata = {});

}  // namespace draftgate::io
