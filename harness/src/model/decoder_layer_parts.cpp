#include "draftgate/model/decoder_layer_parts.h"

namespace draftgate::model {

NormsAndMlp::NormsAndMlp(const WeightLoader& w, const std::string& p, std::int64_t hidden,
                         std::int64_t intermediate)
    : input_norm(w.get(p + "input_layernorm.weight", {hidden})),
      post_norm(w.get(p + "post_attention_layernorm.weight", {hidden})),
      gate_proj(w.get(p + "mlp.gate_proj.weight", {intermediate, hidden})),
      up_proj(w.get(p + "mlp.up_proj.weight", {intermediate, hidden})),
      down_proj(w.get(p + "mlp.down_proj.weight", {hidden, intermediate})) {}

at::Tensor NormsAndMlp::mixer_input(const at::Tensor& h, double eps, NormStyle style) const {
  return rms_norm(h, input_norm, eps, style);
}

at::Tensor NormsAndMlp::add_mlp(const at::Tensor& h, double eps, NormStyle style) const {
  return h + mlp(mlp_input(h, eps, style));
}

at::Tensor NormsAndMlp::mlp_input(const at::Tensor& h, double eps, NormStyle style) const {
  return rms_norm(h, post_norm, eps, style);
}

at::Tensor NormsAndMlp::mlp(const at::Tensor& x) const {
  return swiglu(x, gate_proj, up_proj, down_proj);
}

}  // namespace draftgate::model
