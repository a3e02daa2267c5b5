#pragma once
// What every decoder layer (target or drafter) shares around its mixer: the two pre-norms and the
// SwiGLU MLP.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "draftgate/model/ops.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

struct NormsAndMlp {
  at::Tensor input_norm, post_norm, gate_proj, up_proj, down_proj;

  // Loads `<prefix>input_layernorm.weight`, `post_attention_layernorm.weight` and
  // `mlp.{gate,up,down}_proj.weight`.
  NormsAndMlp(const WeightLoader& w, const std::string& prefix, std::int64_t hidden,
              std::int64_t intermediate);

  at::Tensor mixer_input(const at::Tensor& h, double eps, NormStyle style) const;
  // h + mlp(post_norm(h)).
  at::Tensor add_mlp(const at::Tensor& h, double eps, NormStyle style) const;
  at::Tensor mlp_input(const at::Tensor& h, double eps, NormStyle style) const;  // post_norm(h)
  at::Tensor mlp(const at::Tensor& x) const;
};

}  // namespace draftgate::model
