#include "draftgate/model/tensor_view.h"

#include <cstdint>

#include "draftgate/error.h"

namespace draftgate::io {

std::optional<at::ScalarType> aten_dtype(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return at::kDouble;
    case DType::F32:
      return at::kFloat;
    case DType::F16:
      return at::kHalf;
    case DType::BF16:
      return at::kBFloat16;
    case DType::I64:
      return at::kLong;
    case DType::I32:
      return at::kInt;
    case DType::I16:
      return at::kShort;
    case DType::I8:
      return at::kChar;
    case DType::U8:
      return at::kByte;
    case DType::BOOL:
      return at::kBool;
    default:
      return std::nullopt;
  }
}

DType safetensors_dtype(at::ScalarType type) {
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::BOOL})
    if (aten_dtype(d) == type) return d;
  throw Error("",
              std::string("ATen dtype ") + c10::toString(type) + " has no safetensors equivalent");
}

at::Tensor tensor_view(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info) {
  return tensor_view(file->bytes(info), info, file);
}

at::Tensor tensor_view(std::string_view bytes, const TensorInfo& info,
                       std::shared_ptr<const void> owner) {
  std::vector<int64_t> shape = info.shape;
  const auto native = aten_dtype(info.dtype);
  const at::ScalarType type = native.value_or(at::kByte);
  if (!native && dtype_size(info.dtype) > 1)
    shape.push_back(static_cast<int64_t>(dtype_size(info.dtype)));

  void* data = const_cast<char*>(bytes.data());  // read-only mapping: views must never be written
  at::Tensor view = at::from_blob(
      data, shape, [owner = std::move(owner)](void*) {},
      at::TensorOptions().dtype(type).device(at::kCPU));
  const auto element = static_cast<std::uintptr_t>(c10::elementSize(type));
  if (reinterpret_cast<std::uintptr_t>(data) % element != 0) return view.clone();
  return view;
}

at::Tensor load_tensor(const Checkpoint& checkpoint, std::string_view name) {
  const auto& file = checkpoint.file_of(name);
  return tensor_view(file, *checkpoint.info(name));
}

void write_tensors(const std::filesystem::path& path, const NamedTensors& tensors,
                   const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;
  std::vector<TensorBytes> out;
  keep.reserve(tensors.size());
  out.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    keep.push_back(tensor.detach().to(at::kCPU).contiguous());
    const at::Tensor& t = keep.back();
    out.push_back({name, safetensors_dtype(t.scalar_type()), t.sizes().vec(),
                   std::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes())});
  }
  write_safetensors(path, out, metadata);
}

}  // namespace draftgate::io
