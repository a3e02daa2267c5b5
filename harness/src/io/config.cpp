#include "draftgate/io/config.h"

#include <cmath>
#include <limits>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/json_util.h"

namespace draftgate::io {
using nlohmann::json;

ModelConfig::ModelConfig(json root, std::string file)
    : root_(std::move(root)), file_(std::move(file)) {
  if (!root_.is_object()) throw Error(file_, "config is not a JSON object");
  for (const char* key : {"text_config", "llm_config", "language_config"}) {
    auto it = root_.find(key);
    if (it != root_.end() && it->is_object()) {
      text_path_ = key;
      return;
    }
  }
  auto thinker = root_.find("thinker_config");
  if (thinker != root_.end() && thinker->is_object() && thinker->contains("text_config") &&
      (*thinker)["text_config"].is_object())
    text_path_ = "thinker_config.text_config";
}

ModelConfig ModelConfig::load(const std::filesystem::path& config_json) {
  return ModelConfig(read_json_file(config_json), config_json.string());
}

ModelConfig ModelConfig::from_json(json root, std::string file) {
  return ModelConfig(std::move(root), std::move(file));
}

const json& ModelConfig::text() const {
  if (text_path_.empty()) return root_;
  if (text_path_ == "thinker_config.text_config") return root_["thinker_config"]["text_config"];
  return root_[text_path_];
}

std::string ModelConfig::where(const char* key) const {
  const json& t = text();
  if (!text_path_.empty() && t.contains(key)) return text_path_ + "." + key;
  return key;
}

const json* ModelConfig::lookup(const char* key) const {
  for (const json* scope : {&text(), &root_}) {
    auto it = scope->find(key);
    if (it != scope->end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::optional<std::int64_t> ModelConfig::find_int(const char* key) const {
  const json* v = lookup(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer())
    throw Error(file_, where(key) + " must be an integer, got " + json_excerpt(*v));
  return v->get<std::int64_t>();
}

std::optional<bool> ModelConfig::find_bool(const char* key) const {
  const json* v = lookup(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean())
    throw Error(file_, where(key) + " must be true or false, got " + json_excerpt(*v));
  return v->get<bool>();
}

std::optional<double> ModelConfig::find_double(const char* key) const {
  const json* v = lookup(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number())
    throw Error(file_, where(key) + " must be a number, got " + json_excerpt(*v));
  return v->get<double>();
}

std::int64_t ModelConfig::require_int(const char* key) const {
  auto v = find_int(key);
  if (!v)
    throw Error(file_,
                std::string("missing required field ") + key +
                    (text_path_.empty() ? "" : " (looked in " + text_path_ + " and the root)"));
  return *v;
}

double ModelConfig::require_double(const char* key) const {
  auto v = find_double(key);
  if (!v) throw Error(file_, std::string("missing required field ") + key);
  return *v;
}

double ModelConfig::positive_finite(const char* key, double value) const {
  if (!std::isfinite(value) || value <= 0)
    throw Error(file_,
                where(key) + " = " + format_number(value, 6) + " must be a finite number > 0");
  return value;
}

double ModelConfig::non_negative_finite(const char* key, double value) const {
  if (!std::isfinite(value) || value < 0)
    throw Error(file_,
                where(key) + " = " + format_number(value, 6) + " must be a finite number >= 0");
  return value;
}

double ModelConfig::rms_norm_eps() const {
  // Absent is the families' default; null is what transformers hands the norms (None: a TypeError
  // at the first norm), not a default.
  if (const auto it = text().find("rms_norm_eps"); it != text().end() && it->is_null())
    throw Error(file_, where("rms_norm_eps") + " is null",
                "give the epsilon the model was trained with (1e-6 in the Qwen configs)");
  const double eps =
      non_negative_finite("rms_norm_eps", find_double("rms_norm_eps").value_or(1e-6));
  if (eps > std::numeric_limits<float>::max())
    throw Error(file_,
                where("rms_norm_eps") + " = " + format_number(eps, 6) +
                    " overflows float32, in which the norms add it",
                "give the epsilon the model was trained with (1e-6 in the Qwen configs)");
  return eps;
}

std::int64_t ModelConfig::num_hidden_layers() const {
  for (const char* key : {"num_hidden_layers", "n_layer", "num_layers", "n_layers"}) {
    if (auto n = find_int(key)) {
      if (*n <= 0 || *n > 100000)
        throw Error(file_,
                    where(key) + " = " + std::to_string(*n) + " is not a plausible layer count");
      return *n;
    }
  }
  throw Error(file_, "missing num_hidden_layers (also tried n_layer, num_layers, n_layers)",
              "the decoder stack is validated against the config's layer count");
}

std::int64_t ModelConfig::num_nextn_layers() const {
  for (const char* key : {"num_nextn_predict_layers", "mtp_num_hidden_layers"}) {
    if (auto n = find_int(key)) {
      if (*n < 0 || *n > 64)
        throw Error(file_, where(key) + " = " + std::to_string(*n) + " is out of range");
      return *n;
    }
  }
  return 0;
}

std::optional<std::vector<std::string>> ModelConfig::layer_types() const {
  const json* v = lookup("layer_types");
  if (v == nullptr) return std::nullopt;
  if (!v->is_array()) throw Error(file_, where("layer_types") + " must be an array of strings");
  std::vector<std::string> types;
  for (const json& t : *v) {
    if (!t.is_string())
      throw Error(file_, where("layer_types") + " holds a non-string " + json_excerpt(t));
    std::string s = t.get<std::string>();
    if (s == "attention") s = "full_attention";
    if (s == "mamba") s = "linear_attention";
    types.push_back(std::move(s));
  }
  return types;
}

std::optional<std::int64_t> ModelConfig::full_attention_interval() const {
  auto v = find_int("full_attention_interval");
  if (v && *v <= 0)
    throw Error(file_,
                where("full_attention_interval") + " must be positive, got " + std::to_string(*v));
  return v;
}

std::optional<bool> ModelConfig::tie_word_embeddings() const {
  return find_bool("tie_word_embeddings");
}

std::string ModelConfig::model_type() const {
  const json* v = lookup("model_type");
  if (v == nullptr) return std::string();
  if (!v->is_string())
    throw Error(file_, where("model_type") + " must be a string, got " + json_excerpt(*v));
  return v->get<std::string>();
}

}  // namespace draftgate::io
