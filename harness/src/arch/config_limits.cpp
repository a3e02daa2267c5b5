#include "draftgate/arch/config_limits.h"

#include "draftgate/io/json_util.h"

namespace draftgate::model {

std::optional<ConfigLimit> unsupported_config_value(const io::ModelConfig& config) {
  // Biased projections (LlamaConfig's attention_bias / mlp_bias) would be silently ignored.
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (config.find_bool(key).value_or(false))
      return ConfigLimit{config.where(key) + " = true is not supported",
                         "the engine's projections have no bias"};
  // The MLP is SwiGLU with silu, every supported family's default: another activation would be
  // run as silu.
  for (const nlohmann::json* scope : {&config.text(), &config.root()})
    if (const auto act = scope->find("hidden_act");
        act != scope->end() && !act->is_null() && *act != "silu")
      return ConfigLimit{
          config.where("hidden_act") + " = " + io::json_excerpt(*act) + " is not supported",
          "the engine's MLP is SwiGLU with silu, as every supported family's"};
  return std::nullopt;
}

}  // namespace draftgate::model
