#pragma once
// Serving-engine outputs written the way the engines write them, for the measured-τ tests:
// a vLLM /metrics scrape (prometheus_client's text format: "# HELP" / "# TYPE NAME_total counter",
// NAME_total and NAME_created samples, labels model_name and engine, per-position counters with
// position="0"…, beside unrelated gauges and histograms) and SGLang /generate responses.

#include <optional>
#include <string>
#include <vector>

namespace draftgate::testing {

struct VllmEngineCounts {
  std::string model;
  int engine = 0;
  double drafts = 0, draft_tokens = 0, accepted = 0;
  std::vector<double> per_pos;  // accepted at position 0…k−1
  double created = 1.7645e9;    // the counters' NAME_created (a restart changes it)
};

// One scrape of /metrics holding these engines' counters, and prometheus_client's
// process_start_time_seconds when given.
std::string vllm_scrape(const std::vector<VllmEngineCounts>& engines,
                        std::optional<double> process_start_time = std::nullopt);

struct SglangResponse {
  std::string id;
  long completion_tokens = 0, verify_ct = 0;
  int num_speculative_tokens = 0;  // 0: no proposed / correct drafts fields
  std::vector<long> histogram;     // empty: no histogram field
  // Whose names the drafts counts carry (sglang_requests.cpp lists them): "0.5.10"
  // (spec_accept_token_num / spec_draft_token_num, no histogram), "0.5.11" (spec_accepted_drafts /
  // spec_proposed_drafts / spec_accept_histogram), "0.5.12" (spec_num_correct_drafts /
  // spec_num_proposed_drafts / spec_correct_drafts_histogram and the 0.5.11 names as aliases),
  // "no-aliases" (the 0.5.12 names alone, once SGLang drops the aliases).
  std::string vintage = "0.5.11";
};

// One /generate response as SGLang returns it (text, output_ids, meta_info), on one line. The
// correct drafts are Σ j·histogram[j] when a histogram is given, else completion − verify steps.
std::string sglang_response(const SglangResponse& r);

struct VllmRequest {
  std::string id, model = "Qwen/Qwen3-8B";
  long steps = 0, accepted = 0, drafted = 0;
  int num_spec_tokens = 0;        // 0: not reported
  std::vector<long> histogram;    // dense; empty: not reported
  bool sparse_histogram = false;  // as {"j": count} without the empty buckets
  std::vector<long> per_step_accepted = {}, per_step_drafted = {};  // detailed mode unless empty
  bool per_choice = false;  // in choices[0].speculative_decoding_stats, not metrics
};

// One /v1/completions response of a vLLM server started with --per-request-spec-decode-metrics,
// on one line: mean_acceptance_length and draft_acceptance_rate computed as vLLM does.
std::string vllm_response(const VllmRequest& r);

}  // namespace draftgate::testing
