#pragma once
// A DFlash drafter's config.json, interpreted: the shape of its layers, its block, mask id and the
// target layers it taps. Torch-free, so structural checks read it without loading libtorch.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "draftgate/io/config.h"

namespace draftgate::model {

struct DrafterConfig {
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  double rms_eps = 1e-6;
  double rope_theta = 0;
  std::int64_t block_size = 0;
  std::int64_t mask_token_id = 0;
  std::vector<std::int64_t>
      target_layer_ids;  // taps: outputs of these target layers, in fc input order
  std::optional<std::int64_t> num_target_layers;
  std::optional<std::int64_t> vocab_size;
  std::vector<std::string> layer_types;  // full_attention | sliding_attention
  std::optional<std::int64_t> sliding_window;

  // block_size and mask_token_id at the top level or under dflash_config (must agree where both are
  // given); target_layer_ids required under dflash_config (or the top level): never the default
  // formula, which is wrong for most published drafters. Throws draftgate::Error naming the file
  // and field.
  static DrafterConfig from(const io::ModelConfig& config);

  // The layers the checkpoint's tensors hold (`layers.N.*`, N written canonically: no leading
  // zeros) must be exactly 0..num_layers-1: a config that declares fewer would silently drop
  // trained layers. Throws draftgate::Error naming the file.
  void check_layers(const std::vector<std::string>& tensor_names, const std::string& file) const;
};

}  // namespace draftgate::model
