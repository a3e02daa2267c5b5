#pragma once
// `draftgate tau measure`: τ measured on a live SGLang or vLLM server with a prompt set, greedy
// (temperature 0), into the measured-τ format `tau import` writes (measured_tau.h). The responses
// are read by the same importers `tau import` uses (sglang_requests.h, vllm_requests.h,
// vllm_metrics.h), so a saved run imports to the same τ.
//
// SGLang: GET /get_server_info (identity and speculative configuration), POST /flush_cache (no
// prefix cached from earlier traffic), then POST /generate {rid, input_ids, sampling_params} per
// prompt; statistics from each response's meta_info.
// vLLM: GET /v1/models, /version and /metrics, then POST /v1/completions {model, prompt: token ids,
// max_tokens, temperature 0} per prompt (X-Request-Id: the prompt's id), then /metrics again: τ
// macro from the responses' per-request metrics when the server adds them
// (--per-request-spec-decode-metrics), else τ pooled from the /metrics difference around the run.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "draftgate/tau/measured_tau.h"
#include "draftgate/tau/prompt_set.h"

namespace draftgate::tau {

struct LiveMeasure {
  std::string engine;  // sglang | vllm
  std::string url;     // http(s)://host:port
  const decode::PromptSet* prompts = nullptr;
  std::int64_t max_new_tokens = 256;
  std::size_t concurrency = 1;
  long timeout_seconds = 600;             // per request
  std::optional<std::string> model_name;  // the server must serve it
  // Draft tokens per step, where the server's answers do not say (checked where they do).
  std::optional<std::int64_t> num_speculative_tokens;
  std::string api_key;  // sent as a bearer token when not empty (the engines' --api-key)
};

struct LiveRun {
  MeasuredTau measured;
  // What the server answered, for `tau import` to read again: the generation responses (JSON
  // lines, in prompt order), and for vLLM the /metrics pages before and after the run.
  std::string responses, metrics_before, metrics_after;
};

// draftgate::Error naming the URL (and the endpoint) for a server that cannot be measured:
// speculative decoding off, another model, an answer that is not the engine's, a response for
// another request, statistics missing or inconsistent, no answer within the timeout.
LiveRun measure_live(const LiveMeasure& in);

}  // namespace draftgate::tau
