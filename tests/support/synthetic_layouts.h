#pragma once
// Tensor-name lists and configs of the checkpoint families draftgate must resolve, built the way
// their savers name things (see shared domain notes, layouts.md §1 and §3). Names only: resolution
// never needs weights.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_files.h"

namespace draftgate::testing {

struct SyntheticLayout {
  std::vector<std::string> names;
  nlohmann::json config;
};

// Dense decoder layer names: q/k/v/o (+ q_norm/k_norm), SwiGLU MLP, two norms.
std::vector<std::string> dense_layer(const std::string& layer_prefix, bool qk_norm = true,
                                     const std::string& param = "weight");
// Qwen3.5 Gated DeltaNet layer names.
std::vector<std::string> linear_attention_layer(const std::string& layer_prefix);
// A ViT block stack ("<prefix>.{i}.attn.qkv" ...) of `depth` blocks.
std::vector<std::string> vision_blocks(const std::string& prefix, int depth);

SyntheticLayout qwen3_dense(int layers, bool tied);
// Qwen3.5 VLM: model.language_model.layers + model.visual.blocks + mtp.*; interval-4 layer types.
SyntheticLayout qwen35_vlm(int layers, int vision_depth, bool with_mtp = true);
// Text-only re-save: same model.language_model. prefix, flat config, no vision.
SyntheticLayout qwen35_text_only(int layers);
SyntheticLayout qwen2vl_old(int layers, int vision_depth);
// LLaVA / Gemma 3 style: language_model.model.layers beside
// vision_tower.vision_model.encoder.layers.
SyntheticLayout llava_style(int layers, int vision_layers);
SyntheticLayout llama4_style(int layers, int vision_layers);
SyntheticLayout mllama_style(int layers, const std::vector<int>& cross_layers, int vision_layers,
                             int global_layers);
// GLM-4.5: model.layers 0..N-1 plus an inline MTP layer at index N.
SyntheticLayout glm45_inline_mtp(int layers);
// transformers 5.5.x bug: model.language_model.language_model.language_model.layers, ViT under it.
SyntheticLayout duplicated_wrapper(int layers);
// GPTQ-style quantised suffixes (qweight/qzeros/scales/g_idx) on a Qwen3 layout.
SyntheticLayout gptq_quantised(int layers);

// Writes config.json and a model.safetensors.index.json (no shards): a metadata-only checkpoint.
void write_metadata_only(const std::filesystem::path& dir, const SyntheticLayout& layout);
// Writes config.json and one model.safetensors holding a 2-element F32 tensor per name.
void write_tiny_weights(const std::filesystem::path& dir, const SyntheticLayout& layout);

}  // namespace draftgate::testing
