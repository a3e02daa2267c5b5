#pragma once
// Golden baselines: what the reference drafter measured, recorded once by `draftgate golden
// record` and read by the checks. JSON, schema "draftgate.golden/1":
//   decoding        the decoding configuration τ was measured with (+ target dtype, gdn, and the
//                   drafter layers' causality)
//   prompt_set      {path (relative to the golden file), sha256, prompts}
//   tau             τ macro / pooled, histogram, per-position acceptance, per-prompt results
//   target_layout   {prefix, num_layers, layer_types}
//   taps            the reference drafter's target_layer_ids
//   check_params    per check, parameter values that override its defaults (e.g. loss_type's
//                   expected loss, hidden_state_parity's budgets); users' own parameters win
//   provenance      sha256 of every checkpoint file, draftgate version, recording time

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/decode/decode_config.h"
#include "draftgate/tau/measured_tau.h"

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
  double tau_macro = 0;
  double tau_pooled = 0;
  std::vector<double> per_position_acceptance;
  std::string layout_prefix;
  std::int64_t num_layers = 0;
  std::vector<std::string> layer_types;
  std::vector<std::int64_t> taps;
  // How the reference drafter's layers attended (decoding.causality / drafter_causal, as
  // model::causality_json writes them): the reading applied (zlab | vllm) and each layer's
  // causality inside the block. Empty in goldens recorded before draftgate recorded them.
  std::string causality;
  std::vector<bool> drafter_causal;
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

}  // namespace draftgate::golden
