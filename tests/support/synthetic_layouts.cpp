#include "synthetic_layouts.h"

#include <algorithm>
#include <fstream>

#include "draftgate/io/safetensors.h"

namespace draftgate::testing {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

std::vector<std::string> interval_types(int layers, int interval) {
  std::vector<std::string> t;
  for (int i = 0; i < layers; ++i)
    t.push_back((i + 1) % interval ? "linear_attention" : "full_attention");
  return t;
}

std::vector<std::string> globals(const std::string& root) {
  return {root + ".embed_tokens.weight", root + ".norm.weight"};
}

}  // namespace

std::vector<std::string> dense_layer(const std::string& p, bool qk_norm, const std::string& param) {
  std::vector<std::string> n;
  for (const char* m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                        "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
    n.push_back(p + "." + m + "." + param);
  if (param == "qweight")
    for (const char* m : {"self_attn.q_proj", "mlp.up_proj"}) {
      n.push_back(p + "." + m + ".qzeros");
      n.push_back(p + "." + m + ".scales");
      n.push_back(p + "." + m + ".g_idx");
    }
  if (qk_norm) {
    n.push_back(p + ".self_attn.q_norm.weight");
    n.push_back(p + ".self_attn.k_norm.weight");
  }
  n.push_back(p + ".input_layernorm.weight");
  n.push_back(p + ".post_attention_layernorm.weight");
  return n;
}

std::vector<std::string> linear_attention_layer(const std::string& p) {
  std::vector<std::string> n;
  for (const char* m :
       {"linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.conv1d.weight",
        "linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight",
        "linear_attn.in_proj_a.weight", "linear_attn.in_proj_b.weight", "linear_attn.norm.weight",
        "linear_attn.out_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
        "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight"})
    n.push_back(p + "." + m);
  return n;
}

std::vector<std::string> vision_blocks(const std::string& prefix, int depth) {
  std::vector<std::string> n;
  for (int i = 0; i < depth; ++i)
    for (const char* m : {"norm1.weight", "norm2.weight", "attn.qkv.weight", "attn.proj.weight",
                          "mlp.linear_fc1.weight", "mlp.linear_fc2.weight"})
      n.push_back(prefix + "." + std::to_string(i) + "." + m);
  return n;
}

SyntheticLayout qwen3_dense(int layers, bool tied) {
  SyntheticLayout l;
  l.names = globals("model");
  if (!tied) l.names.push_back("lm_head.weight");
  for (int i = 0; i < layers; ++i)
    append(l.names, dense_layer("model.layers." + std::to_string(i)));
  l.config = {{"architectures", {"Qwen3ForCausalLM"}},
              {"model_type", "qwen3"},
              {"num_hidden_layers", layers},
              {"tie_word_embeddings", tied}};
  return l;
}

SyntheticLayout qwen35_vlm(int layers, int vision_depth, bool with_mtp) {
  SyntheticLayout l;
  l.names = globals("model.language_model");
  l.names.push_back("lm_head.weight");
  for (int i = 0; i < layers; ++i) {
    const std::string p = "model.language_model.layers." + std::to_string(i);
    append(l.names, (i + 1) % 4 ? linear_attention_layer(p) : dense_layer(p));
  }
  append(l.names, vision_blocks("model.visual.blocks", vision_depth));
  l.names.push_back("model.visual.merger.linear_fc1.weight");
  if (with_mtp) {
    append(l.names, dense_layer("mtp.layers.0"));
    for (const char* m : {"mtp.fc.weight", "mtp.norm.weight", "mtp.pre_fc_norm_embedding.weight",
                          "mtp.pre_fc_norm_hidden.weight"})
      l.names.push_back(m);
  }
  l.config = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
              {"model_type", "qwen3_5"},
              {"tie_word_embeddings", false},
              {"text_config",
               {{"model_type", "qwen3_5_text"},
                {"num_hidden_layers", layers},
                {"full_attention_interval", 4},
                {"layer_types", interval_types(layers, 4)},
                {"mtp_num_hidden_layers", with_mtp ? 1 : 0},
                {"tie_word_embeddings", false}}},
              {"vision_config", {{"depth", vision_depth}}}};
  return l;
}

SyntheticLayout qwen35_text_only(int layers) {
  SyntheticLayout l = qwen35_vlm(layers, 0, false);
  l.names.erase(std::remove_if(l.names.begin(), l.names.end(),
                               [](const std::string& n) {
                                 return n == "lm_head.weight" || n.rfind("model.visual", 0) == 0;
                               }),
                l.names.end());
  l.config = {{"architectures", {"Qwen3_5ForCausalLM"}},
              {"model_type", "qwen3_5_text"},
              {"num_hidden_layers", layers},
              {"layer_types", interval_types(layers, 4)},
              {"tie_word_embeddings", true},
              {"mtp_num_hidden_layers", 1}};
  return l;
}

SyntheticLayout qwen2vl_old(int layers, int vision_depth) {
  SyntheticLayout l;
  l.names = globals("model");
  l.names.push_back("lm_head.weight");
  for (int i = 0; i < layers; ++i)
    append(l.names, dense_layer("model.layers." + std::to_string(i), false));
  append(l.names, vision_blocks("visual.blocks", vision_depth));
  l.config = {{"architectures", {"Qwen2VLForConditionalGeneration"}},
              {"model_type", "qwen2_vl"},
              {"num_hidden_layers", layers},
              {"vision_config", {{"depth", vision_depth}}}};
  return l;
}

SyntheticLayout llava_style(int layers, int vision_layers) {
  SyntheticLayout l;
  l.names = globals("language_model.model");
  l.names.push_back("language_model.lm_head.weight");
  for (int i = 0; i < layers; ++i)
    append(l.names, dense_layer("language_model.model.layers." + std::to_string(i), false));
  for (int i = 0; i < vision_layers; ++i)
    append(l.names,
           dense_layer("vision_tower.vision_model.encoder.layers." + std::to_string(i), false));
  l.names.push_back("multi_modal_projector.linear_1.weight");
  l.config = {{"architectures", {"LlavaForConditionalGeneration"}},
              {"model_type", "llava"},
              {"text_config", {{"model_type", "llama"}, {"num_hidden_layers", layers}}},
              {"vision_config", {{"num_hidden_layers", vision_layers}}}};
  return l;
}

SyntheticLayout llama4_style(int layers, int vision_layers) {
  SyntheticLayout l;
  l.names = globals("language_model.model");
  l.names.push_back("language_model.lm_head.weight");
  for (int i = 0; i < layers; ++i) {
    const std::string p = "language_model.model.layers." + std::to_string(i);
    for (const char* m : {"self_attn.q_proj.weight", "self_attn.o_proj.weight",
                          "feed_forward.router.weight", "feed_forward.experts.gate_up_proj",
                          "feed_forward.experts.down_proj", "input_layernorm.weight"})
      l.names.push_back(p + "." + m);
  }
  for (int i = 0; i < vision_layers; ++i)
    append(l.names, dense_layer("vision_model.model.layers." + std::to_string(i), false));
  l.names.push_back("multi_modal_projector.linear_1.weight");
  l.config = {{"architectures", {"Llama4ForConditionalGeneration"}},
              {"model_type", "llama4"},
              {"text_config", {{"num_hidden_layers", layers}}},
              {"vision_config", {{"num_hidden_layers", vision_layers}}}};
  return l;
}

SyntheticLayout mllama_style(int layers, const std::vector<int>& cross_layers, int vision_layers,
                             int global_layers) {
  SyntheticLayout l;
  l.names = globals("language_model.model");
  l.names.push_back("language_model.lm_head.weight");
  for (int i = 0; i < layers; ++i) {
    const std::string p = "language_model.model.layers." + std::to_string(i);
    if (std::find(cross_layers.begin(), cross_layers.end(), i) != cross_layers.end()) {
      for (const char* m :
           {"cross_attn.q_proj.weight", "cross_attn.k_proj.weight", "cross_attn_attn_gate",
            "cross_attn_mlp_gate", "mlp.up_proj.weight", "input_layernorm.weight"})
        l.names.push_back(p + "." + m);
    } else {
      append(l.names, dense_layer(p, false));
    }
  }
  for (int i = 0; i < vision_layers; ++i)
    append(l.names, dense_layer("vision_model.transformer.layers." + std::to_string(i), false));
  for (int i = 0; i < global_layers; ++i)
    append(l.names,
           dense_layer("vision_model.global_transformer.layers." + std::to_string(i), false));
  l.config = {
      {"architectures", {"MllamaForConditionalGeneration"}},
      {"model_type", "mllama"},
      {"text_config", {{"num_hidden_layers", layers}, {"cross_attention_layers", cross_layers}}}};
  return l;
}

SyntheticLayout glm45_inline_mtp(int layers) {
  SyntheticLayout l;
  l.names = globals("model");
  l.names.push_back("lm_head.weight");
  for (int i = 0; i <= layers; ++i)
    append(l.names, dense_layer("model.layers." + std::to_string(i), false));
  l.names.push_back("model.layers." + std::to_string(layers) + ".eh_proj.weight");
  l.config = {{"architectures", {"Glm4MoeForCausalLM"}},
              {"model_type", "glm4_moe"},
              {"num_hidden_layers", layers},
              {"num_nextn_predict_layers", 1}};
  return l;
}

SyntheticLayout duplicated_wrapper(int layers) {
  SyntheticLayout l = qwen35_vlm(layers, 3, false);
  const std::string good = "model.language_model.",
                    bad = "model.language_model.language_model.language_model.";
  for (auto& n : l.names) {
    if (n.rfind(good, 0) == 0) n = bad + n.substr(good.size());
    if (n.rfind("model.visual.", 0) == 0) n = "model.language_model.visual." + n.substr(13);
  }
  return l;
}

SyntheticLayout gptq_quantised(int layers) {
  SyntheticLayout l;
  l.names = globals("model");
  l.names.push_back("lm_head.weight");
  for (int i = 0; i < layers; ++i)
    append(l.names, dense_layer("model.layers." + std::to_string(i), true, "qweight"));
  l.config = {{"model_type", "qwen3"},
              {"num_hidden_layers", layers},
              {"quantization_config", {{"quant_method", "gptq"}}}};
  return l;
}

void write_metadata_only(const fs::path& dir, const SyntheticLayout& layout) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << layout.config.dump(2);
  json map = json::object();
  for (std::size_t i = 0; i < layout.names.size(); ++i)
    map[layout.names[i]] =
        i % 2 ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  std::ofstream(dir / "model.safetensors.index.json")
      << json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(2);
}

void write_tiny_weights(const fs::path& dir, const SyntheticLayout& layout) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << layout.config.dump(2);
  static const float kData[2] = {1.0f, -2.0f};
  std::vector<io::TensorBytes> tensors;
  for (const auto& n : layout.names)
    tensors.push_back(
        {n, io::DType::F32, {2}, std::string_view(reinterpret_cast<const char*>(kData), 8)});
  io::write_safetensors(dir / "model.safetensors", tensors);
}

}  // namespace draftgate::testing
