#pragma once
// vLLM's acceptance counters on /metrics, turned into a MeasuredTau (measured_tau.h).
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

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/tau/measured_tau.h"
#include "draftgate/tau/prometheus.h"

namespace draftgate::tau {

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

}  // namespace draftgate::tau
