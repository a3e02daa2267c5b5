#pragma once
// What every decoder layer (target or drafter) shares around its mixer: the two pre-norms and the
// SwiGLU MLP.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <utility>

#include "draftgate/model/ops.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

// One SwiGLU MLP: `<prefix>{gate,up,down}_proj.weight` (a layer's mlp., or one routed expert).
struct SwiGluMlp {
  at::Tensor gate_proj, up_proj, down_proj;

  SwiGluMlp(const WeightLoader& w, const std::string& prefix, std::int64_t hidden,
            std::int64_t intermediate);
  // From loaded weights (an expert's slices of a fused experts tensor).
  SwiGluMlp(at::Tensor gate, at::Tensor up, at::Tensor down)
      : gate_proj(std::move(gate)), up_proj(std::move(up)), down_proj(std::move(down)) {}
  at::Tensor operator()(const at::Tensor& x) const;  // down(silu(gate(x)) ⊙ up(x))
};

// `<prefix>input_layernorm.weight` and `post_attention_layernorm.weight`.
struct LayerNorms {
  at::Tensor input_norm, post_norm;

  LayerNorms(const WeightLoader& w, const std::string& prefix, std::int64_t hidden);
  at::Tensor mixer_input(const at::Tensor& h, double eps, NormStyle style) const;
  // {h + pending, input_norm(h + pending)}: the previous layer's last residual add, in one pass
  // with this layer's first norm.
  std::pair<at::Tensor, at::Tensor> add_mixer_input(const at::Tensor& h, const at::Tensor& pending,
                                                    double eps, NormStyle style) const;
  at::Tensor mlp_input(const at::Tensor& h, double eps, NormStyle style) const;  // post_norm(h)
  // {h + mixed, post_norm(h + mixed)}: the residual after the mixer, in one pass with its norm.
  std::pair<at::Tensor, at::Tensor> add_mlp_input(const at::Tensor& h, const at::Tensor& mixed,
                                                  double eps, NormStyle style) const;
};

struct NormsAndMlp {
  LayerNorms norms;
  SwiGluMlp dense;

  // Loads the layer norms and `<prefix>mlp.{gate,up,down}_proj.weight`.
  NormsAndMlp(const WeightLoader& w, const std::string& prefix, std::int64_t hidden,
              std::int64_t intermediate);

  at::Tensor mixer_input(const at::Tensor& h, double eps, NormStyle style) const;
  // h + mlp(post_norm(h)).
  at::Tensor add_mlp(const at::Tensor& h, double eps, NormStyle style) const;
  at::Tensor mlp_input(const at::Tensor& h, double eps, NormStyle style) const;  // post_norm(h)
  at::Tensor mlp(const at::Tensor& x) const;
};

}  // namespace draftgate::model
