#include "draftgate/layout/engine_support.h"

#include <algorithm>
#include <optional>

#include "draftgate/arch/config_limits.h"
#include "draftgate/arch/family_table.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/float8.h"
#include "draftgate/io/fp8_headers.h"
#include "draftgate/io/fp8_scheme.h"
#include "draftgate/io/json_util.h"

namespace draftgate::layout {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The quantisation scheme that stored `name`, from the tensor suffixes each one writes.
const char* quantised_suffix_scheme(const std::string& name) {
  static const std::pair<const char*, const char*> kSuffixes[] = {
      {".qweight", "AWQ/GPTQ"},
      {".qzeros", "AWQ/GPTQ"},
      {".g_idx", "GPTQ"},
      {".weight_packed", "compressed-tensors"},
      {".weight_scale", "compressed-tensors"},
      {".weight_zero_point", "compressed-tensors"},
      {".weight_scale_inv", "FP8"},
      {".input_scale", "FP8 with static activation scales"},
      {"_blocks", "MXFP4"},
      {".SCB", "bitsandbytes"},
      {".weight.absmax", "bitsandbytes"},
      {".weight.quant_state.bitsandbytes__nf4", "bitsandbytes"},
      {".weight.quant_state.bitsandbytes__fp4", "bitsandbytes"},
  };
  for (const auto& [suffix, scheme] : kSuffixes)
    if (ends_with(name, suffix)) return scheme;
  return nullptr;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

const nlohmann::json* field(const io::ModelConfig& config, const char* key) {
  for (const nlohmann::json* j : {&config.text(), &config.root()}) {
    auto it = j->find(key);
    if (it != j->end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

// An FP8 block scale beside a weight not stored as float8 (already dequantized, or its codes cast
// to bf16?) or beside no weight: the engine would read the weight as it is and the scale not at
// all.
std::optional<std::string> unread_quantization_tensor(const io::Checkpoint& checkpoint) {
  static const std::string kScale = "_scale_inv";
  for (const std::string& n : checkpoint.names()) {
    if (!ends_with(n, kScale)) continue;
    const std::string weight = n.substr(0, n.size() - kScale.size());
    if (!checkpoint.contains(weight))
      return "an FP8 scale without its weight (" + n + ", no tensor " + weight + ")";
    const io::TensorInfo* info = checkpoint.info(weight);  // none where only the index was kept
    if (info != nullptr && !io::is_float8(info->dtype))
      return "an FP8 scale beside a weight stored " + std::string(io::dtype_name(info->dtype)) +
             " (" + n + "): is " + weight +
             " already dequantized, or its FP8 codes cast? Export it as F8_E4M3 with its scales, "
             "or without them";
  }
  return std::nullopt;
}

// A bias on a decoder layer's projection or norm, on the router (DeepSeek-style
// e_score_correction_bias changes the routing rule) or on lm_head: the engine's modules have none,
// so loading would drop it and compute another model (transformers and vLLM drop unexpected keys
// too, which is why such a checkpoint loads elsewhere without a word).
std::optional<std::string> unread_bias(const io::Checkpoint& checkpoint,
                                       const DecoderStack& stack) {
  const std::string layers = stack.prefix + ".";
  const std::string head = ends_with(stack.lm_head, ".weight")
                               ? stack.lm_head.substr(0, stack.lm_head.size() - 7) + ".bias"
                               : "";
  for (const std::string& n : checkpoint.names())
    if ((n.rfind(layers, 0) == 0 && (ends_with(n, ".bias") || ends_with(n, "_correction_bias"))) ||
        (!head.empty() && n == head))
      return "a bias the engine never reads (" + n +
             "): its projections, norms and routers have none, so it would compute another model";
  return std::nullopt;
}

// Per-expert tensors of an expert past num_experts: the router has num_experts rows, so it would
// never be routed to.
std::optional<std::string> unread_expert(const io::Checkpoint& checkpoint,
                                         const io::ModelConfig& config) {
  const auto experts = config.find_int("num_experts");
  if (!experts || *experts <= 0) return std::nullopt;
  static const std::string kExperts = ".mlp.experts.";
  for (const std::string& n : checkpoint.names()) {
    const std::size_t at = n.find(kExperts);
    if (at == std::string::npos) continue;
    const std::size_t start = at + kExperts.size(), end = n.find('.', start);
    if (end == std::string::npos) continue;  // a fused experts tensor (mlp.experts.gate_up_proj)
    const std::string id = n.substr(start, end - start);
    // The loader asks for experts.0 … experts.E−1: "07", "-1" or "x" is another tensor, unread.
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos ||
        (id.size() > 1 && id[0] == '0'))
      return "an expert tensor the engine never reads (" + n +
             "): experts are numbered 0 … num_experts − 1, without leading zeros";
    if (id.size() > 9 || std::stoll(id) >= *experts)
      return "expert " + id + " (" + n + ") beyond num_experts " + std::to_string(*experts) +
             ", which the router never picks: does config.json belong to this checkpoint?";
  }
  return std::nullopt;
}

}  // namespace

EngineSupport engine_support(const io::Checkpoint& checkpoint, const DecoderStack& stack) {
  EngineSupport s;
  auto add = [&](std::string reason) {
    s.supported = false;
    s.reasons.push_back(std::move(reason));
  };
  const io::ModelConfig& config = checkpoint.config();
  const std::string type = config.model_type();
  const model::FamilyEntry* family = model::find_family(type);
  if (family == nullptr) add(model::unknown_model_type(type));
  if (family != nullptr)
    if (const auto problem = model::architectures_disagree(config, *family)) add(*problem);
  // What the engine computes of the family (its table entry); of an unknown family, nothing
  // beyond unquantised, dense, default-RoPE weights.
  const std::vector<std::string> no_quantization, default_rope = {"default"};
  const auto& quantizations = family ? family->engine.quantizations : no_quantization;
  const auto& rope_types = family ? family->engine.rope_types : default_rope;

  if (const auto method = io::quant_method(config)) {
    if (contains(quantizations, *method)) {
      // Read now: a malformed scheme is bad input before any weight is, and the report names it.
      if (const auto fp8 = io::read_fp8_scheme(config)) {
        s.quantization = fp8->describe();
        // What loading refuses of each FP8 weight's headers (a scale missing, a scale grid of
        // another block size), said here rather than by a forward minutes later. A metadata-only
        // checkpoint has no headers: nothing of the weights to check.
        for (const std::string& n : checkpoint.names())
          if (const io::TensorInfo* info = checkpoint.info(n); info && io::is_float8(info->dtype))
            try {
              io::require_fp8_weight_headers(checkpoint, n, *fp8);
            } catch (const Error& e) {
              add(e.problem());
              break;
            }
        // The block scheme reads weight_scale_inv only: another scheme's tensors beside it (a
        // per-channel weight_scale, a static input_scale) would be left unread.
        const auto other = std::find_if(checkpoint.names().begin(), checkpoint.names().end(),
                                        [](const std::string& n) {
                                          const char* scheme = quantised_suffix_scheme(n);
                                          return scheme != nullptr && std::string(scheme) != "FP8";
                                        });
        if (other != checkpoint.names().end())
          add(std::string("a tensor of another quantisation (") + quantised_suffix_scheme(*other) +
              ": " + *other +
              ") beside the fine-grained FP8 weights, whose scheme reads weight_scale_inv only");
      }
    } else {
      add("quantised weights (quantization_config.quant_method " + *method +
          "): the engine runs unquantised bf16/f32 weights" +
          (quantizations.empty() ? "" : " or " + format_list(quantizations)) +
          "; use the original checkpoint");
    }
  } else {
    const auto& names = checkpoint.names();
    const auto suffixed = std::find_if(names.begin(), names.end(), [](const std::string& n) {
      return quantised_suffix_scheme(n) != nullptr;
    });
    // FP8 weights without the config that says how they are scaled: loading refuses them (looked
    // for only where no quantisation's tensor names were found).
    const auto float8 = [&] {
      return std::find_if(names.begin(), names.end(), [&](const std::string& n) {
        const io::TensorInfo* info = checkpoint.info(n);
        return info != nullptr && io::is_float8(info->dtype);
      });
    };
    if (suffixed != names.end())
      add(std::string("quantised weights (") + quantised_suffix_scheme(*suffixed) +
          " tensors such as " + *suffixed +
          "): the engine runs unquantised bf16/f32 weights; use the original checkpoint");
    else if (const auto f8 = float8(); f8 != names.end())
      add("float8 weights (" + *f8 + " is stored " +
          std::string(io::dtype_name(checkpoint.info(*f8)->dtype)) +
          ") but no quantization_config says how they are scaled: use the checkpoint's own "
          "config.json");
  }
  if (const auto problem = unread_quantization_tensor(checkpoint)) add(*problem);
  if (const auto problem = unread_expert(checkpoint, config)) add(*problem);
  if (const auto problem = unread_bias(checkpoint, stack)) add(*problem);
  if (const auto problem = untied_lm_head_missing(config, stack))
    add(*problem + ": loaders would initialise it randomly");

  const bool moe =
      type.find("moe") != std::string::npos || config.find_int("num_experts").value_or(0) > 0 ||
      std::any_of(checkpoint.names().begin(), checkpoint.names().end(), [](const std::string& n) {
        return n.find(".mlp.experts.") != std::string::npos;
      });
  if (moe && (family == nullptr || family->traits.mlp != model::MlpKind::kMoe))
    add("MoE MLPs (model_type " + type + "): the engine runs dense MLPs" +
        (family ? " for " + family->name : std::string()));
  // A shared expert is computed for the families whose traits say so (Qwen3.5-MoE), not beside
  // another family's routed experts (Qwen2-MoE's shared expert under a qwen3_moe model type).
  const auto shared = std::find_if(
      checkpoint.names().begin(), checkpoint.names().end(),
      [](const std::string& n) { return n.find(".mlp.shared_expert") != std::string::npos; });
  if (moe && shared != checkpoint.names().end() &&
      (family == nullptr || !family->traits.shared_expert))
    add("a shared expert (tensors such as " + *shared + "): the engine runs routed experts only" +
        (family ? " for " + family->name : std::string()));

  if (const auto limit = model::unsupported_config_value(config))
    add(limit->problem + ": " + limit->hint);

  const bool sliding_layers =
      std::any_of(stack.layer_types.begin(), stack.layer_types.end(),
                  [](const std::string& t) { return t.find("sliding") != std::string::npos; });
  if (config.find_bool("use_sliding_window").value_or(false) || sliding_layers)
    add("sliding-window attention" +
        std::string(sliding_layers ? " (layer_types has sliding_attention layers)" : "") +
        ": the engine attends over the whole sequence");

  for (const char* block : {"rope_scaling", "rope_parameters"}) {
    const nlohmann::json* rope = field(config, block);
    if (rope == nullptr || !rope->is_object()) continue;
    for (const char* key : {"rope_type", "type"}) {
      if (!rope->contains(key)) continue;
      const nlohmann::json& value = (*rope)[key];
      if (!value.is_string() || !contains(rope_types, value.get<std::string>()))
        add(std::string(block) + "." + key + " " + io::json_excerpt(value) +
            ": the engine computes " + format_list(rope_types) + " RoPE only");
    }
  }
  return s;
}

}  // namespace draftgate::layout
