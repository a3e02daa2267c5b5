#include "draftgate/io/fp8_scheme.h"

#include <cctype>

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"

namespace draftgate::io {
namespace {

using nlohmann::json;

// The quantization_config of the root or the text config; both present and different is bad input
// (engines read one place or the other, so they would quantise differently).
const json* quantization_config(const ModelConfig& config) {
  const json* found = nullptr;
  for (const json* j : {&config.root(), &config.text()}) {
    auto it = j->find("quantization_config");
    if (it == j->end() || it->is_null()) continue;
    if (found != nullptr && found != &*it && *found != *it)
      throw Error(config.file(),
                  "quantization_config at the top level and text_config.quantization_config "
                  "differ",
                  "engines read one place or the other: keep one, or make them equal");
    if (found == nullptr) found = &*it;
  }
  return found;
}

bool dotted_contains(const std::string& name, const std::string& entry) {
  return ("." + name + ".").find("." + entry + ".") != std::string::npos;
}

}  // namespace

const std::string* Fp8Scheme::excluding(const std::string& module) const {
  std::string starred;  // every run of digits as "*", as transformers matches the list
  for (std::size_t i = 0; i < module.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(module[i])) != 0;
    if (!digit)
      starred += module[i];
    else if (i == 0 || !std::isdigit(static_cast<unsigned char>(module[i - 1])))
      starred += '*';
  }
  for (const auto& entry : not_converted)
    if (dotted_contains(module, entry) || dotted_contains(starred, entry)) return &entry;
  return nullptr;
}

std::string Fp8Scheme::describe() const {
  return "FP8 e4m3, " + std::to_string(block_out) + "x" + std::to_string(block_in) + " blocks";
}

std::optional<std::string> quant_method(const ModelConfig& config) {
  const json* q = quantization_config(config);
  if (q == nullptr) return std::nullopt;
  if (q->is_object() && q->contains("quant_method") && (*q)["quant_method"].is_string())
    return (*q)["quant_method"].get<std::string>();
  return std::string("unnamed");
}

std::optional<Fp8Scheme> read_fp8_scheme(const ModelConfig& config) {
  if (quant_method(config) != std::optional<std::string>("fp8")) return std::nullopt;
  const json& q = *quantization_config(config);
  const std::string& file = config.file();
  const auto bad = [&](const std::string& key, const std::string& problem) {
    return Error(file, "quantization_config." + key + " " + problem,
                 "a fine-grained FP8 checkpoint says {\"quant_method\": \"fp8\", \"fmt\": "
                 "\"e4m3\", \"weight_block_size\": [128, 128]}");
  };
  if (q.contains("fmt") && q["fmt"] != "e4m3")
    throw bad("fmt", json_excerpt(q["fmt"]) + " is not \"e4m3\": draftgate reads F8_E4M3 weights");
  if (q.contains("activation_scheme") && q["activation_scheme"] != "dynamic")
    throw bad("activation_scheme", json_excerpt(q["activation_scheme"]) +
                                       " is not \"dynamic\": block-quantized FP8 checkpoints "
                                       "quantize activations dynamically");
  const auto block = q.find("weight_block_size");
  if (block == q.end() || block->is_null())
    throw bad("weight_block_size",
              "is missing: per-tensor FP8 scales are not read, only block-quantized weights");
  const bool two_positive = block->is_array() && block->size() == 2 &&
                            (*block)[0].is_number_integer() && (*block)[1].is_number_integer() &&
                            (*block)[0].get<std::int64_t>() > 0 &&
                            (*block)[1].get<std::int64_t>() > 0;
  if (!two_positive)
    throw bad("weight_block_size", json_excerpt(*block) + " is not two positive integers");
  Fp8Scheme scheme;
  scheme.block_out = (*block)[0].get<std::int64_t>();
  scheme.block_in = (*block)[1].get<std::int64_t>();
  for (const char* key : {"modules_to_not_convert", "ignored_layers"}) {
    const auto list = q.find(key);
    if (list == q.end() || list->is_null()) continue;
    if (!list->is_array()) throw bad(key, json_excerpt(*list) + " is not a list of module names");
    for (const json& entry : *list) {
      if (!entry.is_string() || entry.get<std::string>().empty())
        throw bad(key, "holds " + json_excerpt(entry) + ", not a module name");
      scheme.not_converted.push_back(entry.get<std::string>());
    }
  }
  scheme.not_converted.push_back("lm_head");
  return scheme;
}

}  // namespace draftgate::io
