#pragma once
// SGLang's per-request counters, turned into a MeasuredTau (measured_tau.h).
//
// SGLang (python/sglang/srt/managers/tokenizer_manager.py, _calculate_spec_decoding_metrics):
// every /generate response carries meta_info.completion_tokens, meta_info.spec_verify_ct and
// meta_info.spec_accept_length = completion_tokens / spec_verify_ct (bonus token included), and
// the correct and proposed drafts (proposed = spec_verify_ct × (draft tokens − 1)) and the
// histogram of verify steps per number of accepted drafts under each version's names
// (sglang_requests.cpp lists them).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/tau/measured_tau.h"

namespace draftgate::tau {

struct SglangImport {
  std::filesystem::path requests;  // JSONL: one /generate response (or an array of them) a line
  std::optional<std::int64_t> num_speculative_tokens;  // needed without spec_proposed_drafts
  std::optional<std::string> engine_version;
  // The prompt set's ids in file order, when --prompts ties the responses to it: by meta_info.id
  // where every response names a prompt, else by order (the counts must agree).
  std::optional<std::vector<std::string>> prompt_ids;
  std::string prompts_file;  // for messages
  // The responses themselves, one JSON document a line, when already in memory (`tau measure`):
  // `requests` then names where they came from (the URL), and messages say "response N".
  std::optional<std::string> text{};
  std::string num_speculative_tokens_from = "--num-speculative-tokens";  // where k came from
};
MeasuredTau import_sglang_requests(const SglangImport& in);

}  // namespace draftgate::tau
