#pragma once
// Golden baselines: what the reference drafter measured, recorded once by `draftgate golden
// record` and read by the checks. JSON, schema "draftgate.golden/1":
//   decoding        the decoding configuration τ was measured with (+ target dtype, gdn, and the
//                   drafter layers' causality)
//   prompt_set      {path (relative to the golden file), sha256 (of the parsed prompts), sha256_of:
//                   "prompts", prompts, turns, rendering (decode::rendering_json: how text and
//                   messages prompts were tokenized; null or absent for token ids)}; without
//                   sha256_of (goldens before 0.2) sha256 is of the prompt file's bytes and is
//                   compared as such
//   tau             τ macro / pooled, histogram, per-position acceptance, per-prompt results
//   target_layout   {prefix, num_layers, layer_types}
//   taps            the reference drafter's target_layer_ids
//   check_params    per check, parameter values that override its defaults (e.g. loss_type's
//                   expected loss, hidden_state_parity's budgets); users' own parameters win
//   provenance      sha256 of every checkpoint file, the target's identity (target_identity below),
//                   draftgate version, recording time

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/tau/decode_config.h"
#include "draftgate/tau/measured_tau.h"
#include "draftgate/tau/prompt_set.h"

namespace draftgate::golden {

inline constexpr const char* kGoldenSchema = "draftgate.golden/1";

struct Golden {
  std::string path;
  decode::DecodeConfig decode;
  std::string mode;  // dflash | ddtree
  std::int64_t block_size = 0;
  std::string dtype;                 // f32 | bf16: the target dtype τ was measured at
  std::string gdn;                   // chunked | recurrent
  std::filesystem::path prompt_set;  // resolved against the golden file's directory
  std::string prompt_set_sha256;
  bool prompt_set_sha256_of_file = false;    // an older golden: sha256 of the prompt file's bytes
  std::optional<std::int64_t> prompt_count;  // prompt_set.prompts (absent in older goldens)
  std::optional<decode::PromptRendering> prompt_rendering;  // null: token ids as given
  // The target τ was measured with: provenance.target.identity (null in older goldens) and
  // provenance.target.files and .path.
  nlohmann::json target_identity;
  nlohmann::json target_files;
  std::string target_path;
  double tau_macro = 0;
  double tau_pooled = 0;
  std::vector<double> per_position_acceptance;
  std::vector<std::int64_t> histogram;  // [k] = steps with τ = k (index 0 unused); empty if absent
  std::string layout_prefix;
  std::int64_t num_layers = 0;
  std::vector<std::string> layer_types;
  std::vector<std::int64_t> taps;
  // How the reference drafter's layers attended (decoding.causality / drafter_causal, as
  // model::causality_json writes them): the reading applied (zlab | vllm) and each layer's
  // causality inside the block. Empty in goldens recorded before draftgate recorded them.
  std::string causality;
  std::vector<bool> drafter_causal;
  // decoding.drafter_architecture: "dflash" or "dflash2" (DFlash2's convolutions and candidate
  // selector); empty in goldens recorded before it was.
  std::string drafter_architecture;
  nlohmann::json check_params = nlohmann::json::object();
  // Set for a golden recorded from a serving engine's measurement (`golden record --measured`):
  // then only prompt_set_sha256, block_size, τ and check_params are filled from it, and the
  // decoding, layout and taps fields are empty (nothing was decoded here).
  std::optional<tau::MeasuredTau> measured;
};

// Validates the schema version and every field above; draftgate::Error naming the file and field.
Golden read_golden(const std::filesystem::path& path);

// A measured golden: {"schema": draftgate.golden/1, "measured": <a draftgate.measured_tau/1
// object>, "check_params": {}, "provenance": {...}} (measured_golden.cpp).
nlohmann::json measured_golden_json(const tau::MeasuredTau& m);
Golden measured_golden_from_json(const nlohmann::json& doc, const std::string& file);

// {relative file name: sha256} of every regular file in a checkpoint directory (sorted).
nlohmann::json directory_hashes(const std::filesystem::path& dir);

// The SHA-256 of a checkpoint directory's config.json (empty without one): the half of its
// identity that reads no weights.
std::string config_sha256(const std::filesystem::path& dir);

// A checkpoint's identity, cheap enough for every min_tau run on a 50 GB target:
// {"config_sha256": of config.json, "weights_fingerprint": SHA-256 over each *.safetensors file's
// name, size, header and 16 samples of 64 KiB spread over its data}. Two checkpoints of the same
// shapes with different weights differ in it.
nlohmann::json target_identity(const std::filesystem::path& dir);

// What a weights fingerprint covers, for messages that say two differ.
inline constexpr const char* kFingerprintCovers =
    "the fingerprint covers the *.safetensors files' names, sizes, headers and sampled bytes: "
    "other "
    "weights, or the same weights saved or sharded anew";

// What differs between `recorded` (a target_identity) and `mine`, the checkpoint `dir`'s
// target_identity ("weights fingerprint 1a2b3c4d5e6f… vs the recorded 9f8e…", naming what the
// fingerprint covers), or nullopt when nothing does. A directory without *.safetensors files
// (metadata only: config and index) is compared by its config.json alone: it has no weights to
// fingerprint.
std::optional<std::string> identity_difference(const nlohmann::json& recorded,
                                               const nlohmann::json& mine,
                                               const std::filesystem::path& dir,
                                               const std::string& recorded_by);

// Nullopt when `target` is the checkpoint the golden was measured with (by target_identity, or —
// in older goldens — by the sha256 of config.json), else what differs.
std::optional<std::string> target_difference(const Golden& golden,
                                             const std::filesystem::path& target);

}  // namespace draftgate::golden
