#include "draftgate/model/decoder_layer_parts.h"

namespace draftgate::model {

SwiGluMlp::SwiGluMlp(const WeightLoader& w, const std::string& p, std::int64_t hidden,
                     std::int64_t intermediate)
    : gate_proj(w.get_linear(p + "gate_proj.weight", {intermediate, hidden})),
      up_proj(w.get_linear(p + "up_proj.weight", {intermediate, hidden})),
      down_proj(w.get_linear(p + "down_proj.weight", {hidden, intermediate})) {}

at::Tensor SwiGluMlp::operator()(const at::Tensor& x) const {
  return swiglu(x, gate_proj, up_proj, down_proj);
}

LayerNorms::LayerNorms(const WeightLoader& w, const std::string& p, std::int64_t hidden)
    : input_norm(w.get(p + "input_layernorm.weight", {hidden})),
      post_norm(w.get(p + "post_attention_layernorm.weight", {hidden})) {}

at::Tensor LayerNorms::mixer_input(const at::Tensor& h, double eps, NormStyle style) const {
  return rms_norm(h, input_norm, eps, style);
}

std::pair<at::Tensor, at::Tensor> LayerNorms::add_mixer_input(const at::Tensor& h,
                                                              const at::Tensor& pending, double eps,
                                                              NormStyle style) const {
  return add_rms_norm(h, pending, input_norm, eps, style);
}

at::Tensor LayerNorms::mlp_input(const at::Tensor& h, double eps, NormStyle style) const {
  return rms_norm(h, post_norm, eps, style);
}

std::pair<at::Tensor, at::Tensor> LayerNorms::add_mlp_input(const at::Tensor& h,
                                                            const at::Tensor& mixed, double eps,
                                                            NormStyle style) const {
  return add_rms_norm(h, mixed, post_norm, eps, style);
}

NormsAndMlp::NormsAndMlp(const WeightLoader& w, const std::string& p, std::int64_t hidden,
                         std::int64_t intermediate)
    : norms(w, p, hidden), dense(w, p + "mlp.", hidden, intermediate) {}

at::Tensor NormsAndMlp::mixer_input(const at::Tensor& h, double eps, NormStyle style) const {
  return norms.mixer_input(h, eps, style);
}

at::Tensor NormsAndMlp::add_mlp(const at::Tensor& h, double eps, NormStyle style) const {
  return h + mlp(mlp_input(h, eps, style));
}

at::Tensor NormsAndMlp::mlp_input(const at::Tensor& h, double eps, NormStyle style) const {
  return norms.mlp_input(h, eps, style);
}

at::Tensor NormsAndMlp::mlp(const at::Tensor& x) const { return dense(x); }

}  // namespace draftgate::model
