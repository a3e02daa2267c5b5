#include "draftgate/model/weights.h"

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::model {

WeightLoader::WeightLoader(const io::Checkpoint& checkpoint, at::ScalarType dtype,
                           at::Device device, ParameterMap* owned)
    : checkpoint_(checkpoint), dtype_(dtype), device_(device), owned_(owned) {}

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
  const at::Tensor t = io::load_tensor(checkpoint_, name);
  if (!t.is_floating_point())
    throw Error(where, "tensor \"" + name + "\" has non-float dtype " +
                           std::string(io::dtype_name(info->dtype)));
  return t;
}

void WeightLoader::require_finite(const std::string& name, const at::Tensor& values) const {
  // One pass over the values: a NaN or Inf weight would silently poison every hidden state.
  if (!at::isfinite(values).all().item<bool>())
    throw Error(checkpoint_.dir().string(), "tensor \"" + name + "\" holds NaN or Inf values",
                "the checkpoint is corrupt or was saved after a diverged step");
}

at::Tensor WeightLoader::checked(const std::string& name,
                                 const std::vector<std::int64_t>& shape) const {
  at::Tensor t = mapped(name, shape);
  require_finite(name, t);
  return t;
}

at::Tensor WeightLoader::get(const std::string& name,
                             const std::vector<std::int64_t>& shape) const {
  return hand_out(name, checked(name, shape).to(device_, dtype_));
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
