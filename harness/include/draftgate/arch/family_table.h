#pragma once
// The target families draftgate knows, in one table: the config.json model types of each, its
// name, its traits (how its layers compute), the layouts its released checkpoints ship in and
// what the engine runs of it. Detection (TargetConfig), engine_support (probe, layer_path),
// make-target, the references' family choice and the tests' family lists all read this table;
// an unknown model type is refused everywhere by unknown_model_type() below. Torch-free.
// Adding a family: docs/development/adding-a-target-family.md.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/arch/family_traits.h"
#include "draftgate/io/config.h"

namespace draftgate::model {

// One enumerator per table entry: the code that must differ per family (the random checkpoint's
// config keys, the naive reference's formulas) switches on it, and -Wswitch names every such
// switch when a family is added.
enum class Family {
  kQwen3,    // dense: plain-w RMSNorm, q/k norm, full NeoX RoPE
  kQwen3_5,  // hybrid (Qwen3.5 / 3.6): (1+w) RMSNorm, gated attention, partial RoPE, Gated DeltaNet
  kLlama,    // Llama-style dense: plain-w RMSNorm, no q/k norm, full NeoX RoPE
  kQwen3Moe,    // Qwen3 attention with routed-expert MLPs (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B)
  kQwen3_5Moe,  // the Qwen3.5 hybrid with routed experts + a gated shared expert on every layer
};

// Where a checkpoint's text decoder lives, as the families' released checkpoints store it.
enum class TargetLayout {
  kFlat,        // model.layers (Qwen3 dense, Qwen3-MoE, Llama)
  kVlm,         // model.language_model.layers + model.visual.blocks + mtp.* (Qwen3.5/3.6 VLMs)
  kTextResave,  // model.language_model.layers, flat qwen3_5_text config (Qwen3_5ForCausalLM
                // re-save)
};
const char* layout_name(TargetLayout layout);  // "flat", "vlm", "text" (make-target --layout)

// What the engine computes of a family beyond its traits (engine_support and TargetConfig refuse
// the rest).
struct FamilyEngineSupport {
  std::vector<std::string> rope_types;     // rope_type values the engine computes: "default"
  std::vector<std::string> quantizations;  // quant_method values it runs; empty: unquantised only
};

// What the family's transformers config class fills in when config.json leaves a field out;
// unset: the field is required.
struct ConfigDefaults {
  bool head_dim_from_heads = false;  // head_dim absent: hidden_size / num_attention_heads
  double rope_theta = 0;             // rope_theta absent: this (0: required)
  // MoE families: the config class has no decoder_sparse_step / mlp_only_layers (every layer
  // routes; a config that sets them otherwise is refused) and no intermediate_size.
  bool moe_every_layer = false;
  // MoE families: the router renormalises the top-k weights whatever the config says; a config
  // with norm_topk_prob false is refused (else it defaults to false and is read).
  bool moe_always_renormalises = false;
};

struct FamilyEntry {
  Family family;
  std::string name;          // also one of model_types; --family, reports' "family"
  std::string display_name;  // for people: "Qwen3 dense"
  // config.json model_type values of this family: the text config's and, for VLM wrappers, the
  // root's.
  std::vector<std::string> model_types;
  // config.json architectures classes of this family (the root's): serving engines pick the model
  // class by these, transformers by model_type, so a class of another family beside this
  // family's model_type is refused (architectures_disagree).
  std::vector<std::string> architectures;
  FamilyTraits traits;
  std::vector<TargetLayout> layouts;  // its released layouts; front() is make-target's default
  FamilyEngineSupport engine;
  ConfigDefaults defaults;
};

// Every family, in the table's order.
const std::vector<FamilyEntry>& families();
void for_each_family(const std::function<void(const FamilyEntry&)>& visit);

const FamilyEntry& entry_of(Family family);
const char* family_name(Family family);
FamilyTraits traits_of(Family family);

// The entry whose model_types hold `model_type`, or nullptr.
const FamilyEntry* find_family(const std::string& model_type);
// The one line every refusal of an unknown model type uses: `model_type "x" is not a target
// family draftgate knows (known: ...)`.
std::string unknown_model_type(const std::string& model_type);
// What is wrong where config.json's architectures name a class of another family than its
// model_type's (`architectures names Qwen3MoeForCausalLM, a Qwen3-MoE class, but model_type
// "qwen3" is Qwen3 dense`), or architectures that is not a list of class names; nothing where
// it is absent or null, or each class is this family's or no family's.
std::optional<std::string> architectures_disagree(const io::ModelConfig& config,
                                                  const FamilyEntry& family);
// The family of a config's model_type; an unknown one, or architectures of another family, is a
// draftgate::Error naming config.json.
const FamilyEntry& family_of(const io::ModelConfig& config);

// The table as data, for the references written in Python (tests/support/families.json holds a
// copy a unit test compares with this): {families: [{name, display_name, model_types, traits,
// layouts, engine}]}.
nlohmann::json families_json();

}  // namespace draftgate::model
