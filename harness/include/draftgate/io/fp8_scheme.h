#pragma once
// A checkpoint's fine-grained FP8 quantisation, read from config.json's `quantization_config` as
// transformers' FineGrainedFP8Config and vLLM's Fp8Config read it (transformers
// src/transformers/integrations/finegrained_fp8.py and quantizers/quantizer_finegrained_fp8.py at
// commit 0095b97653938e60bedf484ded6499f486611582; vllm model_executor/layers/quantization/fp8.py
// at 0071b24bf8fe8c3d1bc3516d0ff8477f07964aaf):
//   {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
//    "weight_block_size": [128, 128], "modules_to_not_convert": [...] | "ignored_layers": [...]}
// A converted linear stores `W.weight` as F8_E4M3 [out, in] beside `W.weight_scale_inv`, float32
// [ceil(out / block[0]), ceil(in / block[1])]; the weight is value(code) x scale_inv of its block,
// the last, partial block of a row or column included (FP8Linear). Torch-free: `probe` reads it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/io/config.h"

namespace draftgate::io {

struct Fp8Scheme {
  std::int64_t block_out = 128;  // weight_block_size[0]: rows (output features) per block
  std::int64_t block_in = 128;   // weight_block_size[1]: columns (input features) per block
  // modules_to_not_convert and ignored_layers, plus "lm_head" (transformers always adds it).
  std::vector<std::string> not_converted;

  // The entry of not_converted naming `module` (a tensor name without ".weight"), or nullptr. An
  // entry names a module when it is a run of whole dotted components of the module's name, where
  // "*" also stands for a layer number ("model.layers.*.mlp.gate", "lm_head", "mlp.gate").
  const std::string* excluding(const std::string& module) const;
  // "FP8 e4m3, 128x128 blocks" for reports.
  std::string describe() const;
};

// quantization_config's quant_method; "unnamed" without one; nullopt without quantization_config.
std::optional<std::string> quant_method(const ModelConfig& config);

// The FP8 scheme of a config whose quant_method is "fp8"; nullopt for any other config. A config
// that says fp8 but is malformed (fmt not e4m3, weight_block_size missing or not two positive
// integers, static activations, a not-convert list that is not a list of strings) is a
// draftgate::Error naming config.json and the key.
std::optional<Fp8Scheme> read_fp8_scheme(const ModelConfig& config);

}  // namespace draftgate::io
