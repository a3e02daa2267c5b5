#pragma once
// Readers of serving-engine acceptance counters, turning them into a MeasuredTau (measured_tau.h).
//
// vLLM (vllm/v1/spec_decode/metrics.py, SpecDecodingProm; labels from vllm/v1/metrics/loggers.py:
// model_name, engine): prometheus_client counters exposed on /metrics as
//   vllm:spec_decode_num_drafts_total{model_name,engine}
//   vllm:spec_decode_num_draft_tokens_total{model_name,engine}
//   vllm:spec_decode_num_accepted_tokens_total{model_name,engine}
//   vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name,engine,position="0"…"k-1"}
// (plus *_created samples, creation times, which with process_start_time_seconds reveal a
// restart between two scrapes). Over a run (after − before):
// τ pooled = 1 + accepted / drafts ("mean acceptance length, conventionally including the bonus
// token"), acceptance at depth d = accepted_per_pos[d−1] / drafts.
//
// SGLang (python/sglang/srt/managers/tokenizer_manager.py, _calculate_spec_decoding_metrics):
// every /generate response carries meta_info.completion_tokens, meta_info.spec_verify_ct and
// meta_info.spec_accept_length = completion_tokens / spec_verify_ct (bonus token included), and
// the correct and proposed drafts (proposed = spec_verify_ct × (draft tokens − 1)) and the
// histogram of verify steps per number of accepted drafts under each version's names
// (sglang_requests.cpp lists them).
//
// vLLM per request (--per-request-spec-decode-metrics, vllm#48915): each response's
// metrics.speculative_decoding (vllm_requests.cpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "draftgate/tau/measured_tau.h"

namespace draftgate::tau {

// One sample line of the Prometheus text exposition format (version 0.0.4).
struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;  // NaN / ±Inf kept as parsed; the importers refuse them where they read
  std::size_t line = 0;
};

struct PromText {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // family → "# TYPE" (counter, gauge, …)
};

// Parses the text format: # HELP / # TYPE / other comments, label sets with escapes, values
// (floats, NaN, +Inf, -Inf), optional timestamps. draftgate::Error naming `file` and the line
// otherwise.
PromText parse_prometheus_text(std::string_view text, const std::string& file);

// One /metrics scrape: where it came from (a file, or a URL and when it was taken) and its samples.
struct Scrape {
  std::string source;
  PromText text;
};
constexpr std::uint64_t kMaxScrapeBytes = 64ull << 20;
// A scrape saved to a file.
Scrape read_scrape_file(const std::filesystem::path& path);

struct VllmImport {
  Scrape after;
  std::optional<Scrape> before;           // none: the counters since the server started
  std::optional<std::string> model_name;  // needed when several models are served
  std::optional<std::int64_t> num_speculative_tokens;  // needed without per-position series
  std::optional<std::string> engine_version;
};
MeasuredTau import_vllm_metrics(const VllmImport& in);

// The same counters in the same format, as vLLM's /metrics would show them for a run of
// `drafts` verify steps: draftgate eval --metrics-out, so both paths can be checked to agree.
// accepted_per_pos[i] = verify steps that accepted the draft at depth i + 1.
std::string vllm_metrics_text(const std::string& model_name, std::int64_t drafts,
                              std::int64_t draft_tokens, std::int64_t accepted,
                              const std::vector<std::int64_t>& accepted_per_pos);

struct SglangImport {
  std::filesystem::path requests;  // JSONL: one /generate response (or an array of them) a line
  std::optional<std::int64_t> num_speculative_tokens;  // needed without spec_proposed_drafts
  std::optional<std::string> engine_version;
  // The prompt set's ids in file order, when --prompts ties the responses to it: by meta_info.id
  // where every response names a prompt, else by order (the counts must agree).
  std::optional<std::vector<std::string>> prompt_ids;
  std::string prompts_file;  // for messages
};
MeasuredTau import_sglang_requests(const SglangImport& in);

struct VllmRequestsImport {
  std::filesystem::path responses;  // JSONL: one OpenAI-compatible vLLM response a line
  std::optional<std::int64_t> num_speculative_tokens;  // needed when no response says
  std::optional<std::string> model_name;               // every response's "model" must be it
  std::optional<std::string> engine_version;
  std::optional<std::size_t> prompts;  // the prompt set's size: responses are tied by order
  std::string prompts_file;            // for messages
};
MeasuredTau import_vllm_requests(const VllmRequestsImport& in);

}  // namespace draftgate::tau
