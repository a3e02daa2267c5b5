#pragma once
// A Hugging Face config.json, with the text sub-config found wherever the family nests it.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace draftgate::io {

class ModelConfig {
 public:
  static ModelConfig load(const std::filesystem::path& config_json);
  // `file` names the source in errors.
  static ModelConfig from_json(nlohmann::json root, std::string file);

  const std::string& file() const { return file_; }
  const nlohmann::json& root() const { return root_; }
  // The text decoder's config: `text_config`, `llm_config`, `language_config`,
  // `thinker_config.text_config` (first that is an object), else the root.
  const nlohmann::json& text() const;
  // Where text() lives, for messages: "text_config", "thinker_config.text_config", or "" for the
  // root.
  const std::string& text_path() const { return text_path_; }

  // Integer field of the text config, then of the root (flat Qwen2-VL configs keep it there).
  std::optional<std::int64_t> find_int(const char* key) const;
  std::optional<bool> find_bool(const char* key) const;
  std::optional<double> find_double(const char* key) const;
  // Like find_*, but a missing field is a draftgate::Error naming the file and key.
  std::int64_t require_int(const char* key) const;
  double require_double(const char* key) const;

  // Range checks shared by the target and drafter configs: RoPE theta finite and > 0, RMSNorm
  // epsilon finite and >= 0 (the values NaN logits come from otherwise).
  double positive_finite(const char* key, double value) const;
  double non_negative_finite(const char* key, double value) const;

  // rms_norm_eps, 1e-6 where absent (the supported config classes' default): finite, >= 0 and a
  // float32, in which the norms add it (1e300 read as float32 infinity made every output 0).
  double rms_norm_eps() const;

  // num_hidden_layers (or n_layer / num_layers / n_layers); required.
  std::int64_t num_hidden_layers() const;
  // Extra next-token-prediction (MTP) layers: num_nextn_predict_layers or mtp_num_hidden_layers,
  // else 0.
  std::int64_t num_nextn_layers() const;
  // layer_types with legacy names remapped ("attention" -> full_attention, "mamba" ->
  // linear_attention).
  std::optional<std::vector<std::string>> layer_types() const;
  std::optional<std::int64_t> full_attention_interval() const;
  // tie_word_embeddings of the text config, else of the root.
  std::optional<bool> tie_word_embeddings() const;
  std::string model_type() const;  // text config's model_type, else the root's, else ""

  // "config.json: text_config.num_hidden_layers" style location for messages.
  std::string where(const char* key) const;

 private:
  ModelConfig(nlohmann::json root, std::string file);
  const nlohmann::json* lookup(const char* key) const;

  nlohmann::json root_;
  std::string file_;
  std::string text_path_;
};

}  // namespace draftgate::io
