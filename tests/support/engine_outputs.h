#pragma once
// Serving-engine outputs written the way the engines write them, for the measured-τ tests:
// a vLLM /metrics scrape (prometheus_client's text format: "# HELP" / "# TYPE NAME_total counter",
// NAME_total and NAME_created samples, labels model_name and engine, per-position counters with
// position="0"…, beside unrelated gauges and histograms) and SGLang /generate responses.

#include <string>
#include <vector>

namespace draftgate::testing {

struct VllmEngineCounts {
  std::string model;
  int engine = 0;
  double drafts = 0, draft_tokens = 0, accepted = 0;
  std::vector<double> per_pos;  // accepted at position 0…k−1
};

// One scrape of /metrics holding these engines' counters.
std::string vllm_scrape(const std::vector<VllmEngineCounts>& engines);

struct SglangResponse {
  std::string id;
  long completion_tokens = 0, verify_ct = 0;
  int num_speculative_tokens = 0;  // 0: no spec_proposed_drafts field
  std::vector<long> histogram;     // empty: no spec_accept_histogram field
};

// One /generate response as SGLang returns it (text, output_ids, meta_info), on one line.
std::string sglang_response(const SglangResponse& r);

}  // namespace draftgate::testing
