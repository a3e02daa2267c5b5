#include "draftgate/model/weights.h"

#include <limits>
#include <stdexcept>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/float8.h"
#include "draftgate/io/fp8_headers.h"
#include "draftgate/model/fp8_weights.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::model {
WeightLoader::WeightLoader(const io::Checkpoint& checkpoint, at::ScalarType dtype,
                           at::Device device, ParameterMap* owned, WeightBuffers* reuse,
                           const StagedTensors* staged)
    : checkpoint_(checkpoint),
      fp8_(io::read_fp8_scheme(checkpoint.config())),
      dtype_(dtype),
      device_(device),
      owned_(owned),
      reuse_(reuse),
      staged_(staged) {
  // A quantization_config the engine does not read (AWQ, GPTQ, …) over tensors that load as
  // floats: probe and layer_path say the engine cannot run it, so loading it runs nothing either.
  if (const auto method = io::quant_method(checkpoint.config()); method && !fp8_)
    throw Error(checkpoint.config().file(),
                "quantization_config.quant_method " + *method +
                    ": the engine runs unquantised bf16/f32 weights or fine-grained fp8",
                "use the original checkpoint, or remove the quantization_config if its tensors "
                "are not quantised");
}

at::Tensor WeightLoader::stored_tensor(const std::string& name) const {
  if (staged_ != nullptr)
    if (at::Tensor t = staged_->find(name); t.defined()) return t;
  return io::load_tensor(checkpoint_, name);
}

at::Tensor WeightLoader::mapped(const std::string& name,
                                const std::vector<std::int64_t>& shape) const {
  const std::string where = checkpoint_.dir().string();
  if (!checkpoint_.contains(name)) {
    for (const char* q : {".weight_packed", ".qweight", ".weight_scale"}) {
      const std::string module = name.substr(0, name.rfind('.'));
      if (checkpoint_.contains(module + q))
        throw Error(where, "tensor \"" + name + "\" is stored quantised (" + module + q + ")",
                    "draftgate runs unquantised checkpoints; use the bf16/f32 original");
    }
    throw Error(where, "missing tensor \"" + name + "\"");
  }
  const io::TensorInfo* info = checkpoint_.info(name);
  if (info != nullptr && info->shape != shape)
    throw Error(where, "tensor \"" + name + "\" has shape " + format_shape(info->shape) +
                           ", config implies " + format_shape(shape));
  if (info != nullptr && io::is_float8(info->dtype))
    throw Error(checkpoint_.file_of(name)->path().string(),
                "tensor \"" + name + "\" is stored " + std::string(io::dtype_name(info->dtype)) +
                    ", but draftgate reads it unquantised (FP8 checkpoints keep the embeddings "
                    "and lm_head in bf16)",
                "list its module in quantization_config.modules_to_not_convert and store it "
                "unquantised");
  const at::Tensor t = stored_tensor(name);
  if (!t.is_floating_point())
    throw Error(where, "tensor \"" + name + "\" has non-float dtype " +
                           std::string(io::dtype_name(info->dtype)));
  return t;
}

void WeightLoader::require_finite(const std::string& name, const at::Tensor& values) const {
  // One pass over the values: a NaN or Inf weight would silently poison every hidden state. A
  // staged tensor was scanned as it was read (all of it: any slice of it is finite too).
  if (staged_ != nullptr && staged_->verified_finite(name)) return;
  if (!all_finite(values)) throw_non_finite(name);
}

void WeightLoader::throw_non_finite(const std::string& name) const {
  throw Error(checkpoint_.file_of(name)->path().string(),  // the shard that holds it
              "tensor \"" + name + "\" holds NaN or Inf values",
              "the checkpoint is corrupt or was saved after a diverged step");
}

at::Tensor WeightLoader::checked(const std::string& name,
                                 const std::vector<std::int64_t>& shape) const {
  const io::TensorInfo* info = checkpoint_.info(name);
  at::Tensor t = info != nullptr && io::is_float8(info->dtype) ? dequantized(name, shape, *info)
                                                               : mapped(name, shape);
  require_finite(name, t);
  return t;
}

at::Tensor WeightLoader::dequantized(const std::string& name,
                                     const std::vector<std::int64_t>& shape,
                                     const io::TensorInfo& info,
                                     std::optional<std::int64_t> index) const {
  const std::string file = checkpoint_.file_of(name)->path().string();
  const std::string tensor = "tensor \"" + name + "\"";
  const std::string stored = std::string(io::dtype_name(info.dtype));
  if (!fp8_)
    throw Error(file,
                tensor + " is stored " + stored +
                    " but config.json has no "
                    "quantization_config with quant_method \"fp8\"",
                "use the checkpoint's own config.json, which says how its FP8 weights are scaled");
  io::require_fp8_weight_headers(checkpoint_, name, *fp8_);
  if (info.shape != shape)
    throw Error(checkpoint_.dir().string(), tensor + " has shape " + format_shape(info.shape) +
                                                ", config implies " + format_shape(shape));
  const std::string scale_name = name + "_scale_inv";
  const std::string scale_file = checkpoint_.file_of(scale_name)->path().string();
  const at::Tensor scale_inv = stored_tensor(scale_name).to(at::kFloat);
  if (!(at::isfinite(scale_inv).all().item<bool>() && (scale_inv > 0).all().item<bool>()))
    throw Error(scale_file, "tensor \"" + scale_name + "\" holds a scale that is NaN, Inf or <= 0",
                "the checkpoint is corrupt: every FP8 block scale is a positive finite number");
  // The largest e4m3 code is 448: a larger scale than FLT_MAX / 448 makes finite codes Inf, which
  // the weight's finiteness check would blame on the weight.
  const double largest = scale_inv.max().item<double>();
  if (largest > std::numeric_limits<float>::max() / 448.0)
    throw Error(scale_file,
                "tensor \"" + scale_name + "\" holds a scale of " + format_number(largest, 4) +
                    ", whose product with the largest e4m3 value (448) overflows float32",
                "the checkpoint is corrupt: FP8 block scales are about max|w| / 448");
  const at::Tensor codes = stored_tensor(name);
  if (index) return dequantize_fp8_blocks(codes[*index], scale_inv[*index], *fp8_);
  return dequantize_fp8_blocks(codes, scale_inv, *fp8_);
}

at::Tensor WeightLoader::get_linear_slice(const std::string& name,
                                          const std::vector<std::int64_t>& shape,
                                          std::int64_t index) const {
  if (owned_ != nullptr)
    throw std::logic_error("get_linear_slice: a training loader takes whole tensors");
  const io::TensorInfo* info = checkpoint_.info(name);
  if (info == nullptr || !io::is_float8(info->dtype))
    return converted_linear(name, mapped(name, shape)[index]);
  const at::Tensor t = dequantized(name, shape, *info, index);
  require_finite(name, t);
  return t.to(device_, dtype_);
}

at::Tensor WeightLoader::get(const std::string& name,
                             const std::vector<std::int64_t>& shape) const {
  const io::TensorInfo* info = checkpoint_.info(name);
  if (owned_ == nullptr && info != nullptr && !io::is_float8(info->dtype))
    return converted(name, mapped(name, shape));
  return hand_out(name, checked(name, shape).to(device_, dtype_));
}

at::Tensor WeightLoader::get_linear(const std::string& name,
                                    const std::vector<std::int64_t>& shape) const {
  const io::TensorInfo* info = checkpoint_.info(name);
  if (!keeps_linear_bf16() || info == nullptr || info->dtype != io::DType::BF16)
    return get(name, shape);
  const at::Tensor stored = mapped(name, shape);
  require_finite(name, stored);
  return stored;
}

at::Tensor WeightLoader::converted_linear(const std::string& name, const at::Tensor& values) const {
  if (!keeps_linear_bf16() || values.scalar_type() != at::kBFloat16 || !values.device().is_cpu())
    return converted(name, values);
  require_finite(name, values);
  return values;
}

bool WeightLoader::keeps_linear_bf16() const {
  return owned_ == nullptr && dtype_ == at::kFloat && device_.is_cpu();
}

at::Tensor WeightLoader::converted(const std::string& name, const at::Tensor& values) const {
  if (values.scalar_type() == dtype_ && values.device() == device_) {
    require_finite(name, values);
    return values;
  }
  at::Tensor out = reuse_ != nullptr
                       ? reuse_->take(values.sizes(), dtype_, device_)
                       : at::empty(values.sizes(), values.options().dtype(dtype_).device(device_));
  if (!copy_checking_finite(out, values)) throw_non_finite(name);
  return out;
}

at::Tensor WeightLoader::get_f32(const std::string& name,
                                 const std::vector<std::int64_t>& shape) const {
  return hand_out(name, checked(name, shape).to(device_, at::kFloat));
}

at::Tensor WeightLoader::hand_out(const std::string& name, at::Tensor converted) const {
  if (owned_ == nullptr) return converted;
  at::Tensor copy = converted.clone();  // never the read-only mapping: training writes into it
  (*owned_)[name] = copy;
  return copy;
}

}  // namespace draftgate::model
