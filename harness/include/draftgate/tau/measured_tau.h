#pragma once
// Measured τ: acceptance counters a serving engine (vLLM, SGLang) counted over a benchmark run,
// imported by `draftgate tau import` into a file min_tau can gate on instead of decoding
// (schema "draftgate.measured_tau/1"):
//   engine                 {name: vllm | sglang, version (null when unknown)}
//   tau_definition         the τ a golden recorded from this file gates on: "macro" (the mean over
//                          requests of each request's τ) wherever per-request data exist (SGLang
//                          responses, vLLM per-request metrics), else "pooled" (vLLM /metrics)
//   tau_pooled, tau_macro  both where the input allows (tau_macro null for vLLM /metrics counters)
//   tau_formulas           {pooled, macro, per_position_acceptance}: what each number counts, by
//                          engine (tau_formula); older files have none and get their engine's
//   per_position_acceptance  depth 1…k: share of drafts whose depth-d token was accepted ([] when
//                          the engine did not report it)
//   drafts, draft_tokens, accepted_tokens, requests (null for vLLM)
//   num_speculative_tokens k, block_size k + 1 (the largest τ of one verify step)
//   model_name             the served model the counters belong to (null when unknown)
//   prompt_set             {path, sha256, sha256_of: "prompts", prompts, rendering} of the prompt
//                          set (the identity goldens use: the SHA-256 of the parsed prompts, and
//                          how text and messages were rendered, null for token ids) or null; files
//                          without sha256_of (before 0.2) hold the SHA-256 of the file's bytes
//   sources                per number, where it came from (series, files, arithmetic)
//   inputs                 the files read; draftgate_version; created_at

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/tau/prompt_set.h"

namespace draftgate::tau {

inline constexpr const char* kMeasuredTauSchema = "draftgate.measured_tau/1";

struct MeasuredTau {
  std::string path;  // the file it was read from ("" when built in memory)
  std::string engine;
  std::optional<std::string> engine_version;
  std::string tau_definition;  // pooled | macro
  double tau_pooled = 0;
  std::optional<double> tau_macro;
  std::vector<double> per_position_acceptance;
  std::int64_t drafts = 0;
  std::int64_t draft_tokens = 0;
  std::int64_t accepted_tokens = 0;
  std::optional<std::int64_t> requests;
  std::int64_t num_speculative_tokens = 0;
  std::optional<std::string> model_name;
  std::optional<std::string> prompt_set_path;
  std::optional<std::string> prompt_set_sha256;
  bool prompt_set_sha256_of_file = false;  // an older file: sha256 of the prompt file's bytes
  std::optional<std::int64_t> prompt_set_prompts;
  std::optional<decode::PromptRendering> prompt_set_rendering;  // null: token ids as given
  std::map<std::string, std::string> formulas;  // definition → what it counts, as a file recorded
  nlohmann::json sources = nlohmann::json::object();
  nlohmann::json inputs = nlohmann::json::object();

  std::int64_t block_size() const { return num_speculative_tokens + 1; }
  // The τ the gate compares: tau_pooled or *tau_macro, by tau_definition.
  double tau() const;
  // τ by the given definition (pooled | macro), or nullopt when the input gave no τ macro.
  std::optional<double> tau_of(const std::string& definition) const;
  // What `definition` counts: as the file recorded it, else tau_formula(engine, definition).
  std::string formula(const std::string& definition) const;
};

// Per-depth acceptance from acceptance histograms (bucket a: verify steps that accepted a drafts,
// a = 0…k): add one request's histogram to `at_least` (k counts: steps that accepted ≥ d drafts,
// d = 1…k), then divide by all the steps.
void add_steps_accepting_at_least(const std::vector<std::int64_t>& histogram,
                                  std::vector<std::int64_t>& at_least);
std::vector<double> acceptance_per_position(const std::vector<std::int64_t>& at_least,
                                            std::int64_t steps);

// What a τ (pooled | macro | per_position_acceptance) counts when measured by `engine`: SGLang's
// per-request τ is completion_tokens / spec_verify_ct (the prefill token included), vLLM's
// 1 + accepted drafts / verify steps.
std::string tau_formula(const std::string& engine, const std::string& definition);

// The file's JSON (schema, every field above, draftgate_version, created_at).
nlohmann::json to_json(const MeasuredTau& m);
// Validates the schema version and every field; draftgate::Error naming `file` and the field.
MeasuredTau measured_tau_from_json(const nlohmann::json& doc, const std::string& file);
MeasuredTau read_measured_tau(const std::filesystem::path& path);

// A JSON value for a message: a scalar as written (at most 40 characters), else its type — never a
// dump of a nested value, which could be arbitrarily deep.
std::string describe_json(const nlohmann::json& value);

// Why `measured` cannot be compared with `golden` on the golden's τ definition (another engine, no
// τ of that definition or one counted by another formula, block size, prompt set, or an unknown
// prompt set), or nullopt when they are measured the same way.
std::optional<std::string> unlike(const MeasuredTau& measured, const MeasuredTau& golden);

}  // namespace draftgate::tau
