#pragma once
// vLLM's per-request speculative metrics (--per-request-spec-decode-metrics, vllm#48915): each
// response's metrics.speculative_decoding, turned into a MeasuredTau (measured_tau.h;
// vllm_requests.cpp says which fields and how they are cross-checked).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "draftgate/tau/measured_tau.h"

namespace draftgate::tau {

struct VllmRequestsImport {
  std::filesystem::path responses;  // JSONL: one OpenAI-compatible vLLM response a line
  std::optional<std::int64_t> num_speculative_tokens;  // needed when no response says
  std::optional<std::string> model_name;               // every response's "model" must be it
  std::optional<std::string> engine_version;
  std::optional<std::size_t> prompts;  // the prompt set's size: responses are tied by order
  std::string prompts_file;            // for messages
  // The responses themselves, one JSON document a line, when already in memory (`tau measure`):
  // `responses` then names where they came from (the URL), and messages say "response N".
  std::optional<std::string> text{};
  std::string num_speculative_tokens_from = "--num-speculative-tokens";  // where k came from
};
MeasuredTau import_vllm_requests(const VllmRequestsImport& in);

}  // namespace draftgate::tau
