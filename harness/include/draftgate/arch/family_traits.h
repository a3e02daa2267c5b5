#pragma once
// How a target family's layers compute, as data the model math branches on (never the family's
// name). Torch-free: the family table (family_table.h) holds one FamilyTraits per family.

#include <stdexcept>

namespace draftgate::model {

enum class NormStyle {
  kPlain,     // x̂ · w            (Qwen3RMSNorm: weight * x̂.to(input dtype))
  kOnePlusW,  // x̂ · (1 + w) in f32 (Qwen3_5RMSNorm, zero-initialised weight)
};

enum class MlpKind {
  kDense,  // one SwiGLU MLP per layer (mlp.{gate,up,down}_proj)
  kMoe,    // routed experts (mlp.gate + mlp.experts.*) where the config makes a layer sparse
};

struct FamilyTraits {
  NormStyle norm = NormStyle::kPlain;  // every RMSNorm of the model (layers, q/k, final)
  bool qk_norm = false;                // per-head RMSNorm of q and k before RoPE (q_norm, k_norm)
  bool partial_rope = false;           // rotary_dim = head_dim × partial_rotary_factor
  bool attn_output_gate = false;       // default of attn_output_gate (q_proj doubled)
  bool linear_attention = false;       // Gated DeltaNet layers (layer_types linear_attention)
  MlpKind mlp = MlpKind::kDense;
  // Routed-expert layers also run one shared SwiGLU expert (mlp.shared_expert.*) on every position,
  // its output scaled by sigmoid(mlp.shared_expert_gate · x) (Qwen3_5MoeSparseMoeBlock).
  bool shared_expert = false;
};

// Builds a FamilyTraits by naming every trait exactly once:
//   constexpr FamilyTraits kX = TraitsBuilder().norm(NormStyle::kPlain).partial_rope(false)...;
// Converting a builder that misses a trait (or names one twice) throws; in a constexpr
// initialiser that is a compile error pointing at the entry. A new trait is a FamilyTraits
// member, a Trait below and a setter: kTraitCount then grows and every entry that does not name
// the new trait stops compiling.
class TraitsBuilder {
  enum Trait : unsigned {
    kNorm,
    kQkNorm,
    kPartialRope,
    kAttnOutputGate,
    kLinearAttention,
    kMlp,
    kSharedExpert,
    kTraitCount
  };

 public:
  constexpr TraitsBuilder norm(NormStyle v) const {
    TraitsBuilder b = set(kNorm);
    b.traits_.norm = v;
    return b;
  }
  constexpr TraitsBuilder qk_norm(bool v) const {
    TraitsBuilder b = set(kQkNorm);
    b.traits_.qk_norm = v;
    return b;
  }
  constexpr TraitsBuilder partial_rope(bool v) const {
    TraitsBuilder b = set(kPartialRope);
    b.traits_.partial_rope = v;
    return b;
  }
  constexpr TraitsBuilder attn_output_gate(bool v) const {
    TraitsBuilder b = set(kAttnOutputGate);
    b.traits_.attn_output_gate = v;
    return b;
  }
  constexpr TraitsBuilder linear_attention(bool v) const {
    TraitsBuilder b = set(kLinearAttention);
    b.traits_.linear_attention = v;
    return b;
  }
  constexpr TraitsBuilder mlp(MlpKind v) const {
    TraitsBuilder b = set(kMlp);
    b.traits_.mlp = v;
    return b;
  }
  constexpr TraitsBuilder shared_expert(bool v) const {
    TraitsBuilder b = set(kSharedExpert);
    b.traits_.shared_expert = v;
    return b;
  }

  // NOLINTNEXTLINE(google-explicit-constructor): the conversion is the point of the builder.
  constexpr operator FamilyTraits() const {
    return named_ == (1u << kTraitCount) - 1
               ? traits_
               : throw std::logic_error("TraitsBuilder: a FamilyTraits trait is not named");
  }

 private:
  constexpr TraitsBuilder set(Trait t) const {
    if (named_ & (1u << t)) throw std::logic_error("TraitsBuilder: a trait is named twice");
    TraitsBuilder b = *this;
    b.named_ |= 1u << t;
    return b;
  }

  FamilyTraits traits_{};
  unsigned named_ = 0;
};

}  // namespace draftgate::model
