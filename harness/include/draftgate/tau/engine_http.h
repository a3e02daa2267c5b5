#pragma once
// JSON over HTTP to a serving engine, as `tau measure` talks to it: every request bounded in time
// and in the size of its answer, transient failures (502 / 503 / 504: a server restarting a worker,
// a proxy in front of it) retried a bounded number of times, everything else bad input naming the
// URL — an answer that is not JSON, an error status, no answer in time.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/tau/vllm_metrics.h"

namespace draftgate::tau {

// A generation response carries its tokens and statistics; 16 MiB is far beyond any (65,536 tokens
// as JSON numbers are under 1 MiB), so a larger answer is not an engine's.
inline constexpr std::uint64_t kMaxEngineAnswerBytes = 16ull << 20;
inline constexpr int kTransientRetries = 3;  // after the first try: 0.5 s, 1 s, 2 s apart

class EngineHttp {
 public:
  // `base`: the server's URL (http://host:port, a trailing slash dropped); `timeout_seconds`
  // bounds each request; `api_key`, when not empty, goes with every request as
  // "Authorization: Bearer …" (the engines' --api-key).
  EngineHttp(std::string base, long timeout_seconds, std::string api_key = {});

  const std::string& base() const { return base_; }
  std::string url(const std::string& path) const { return base_ + path; }

  // GET (body null) or POST `body` to `path`; returns the answer parsed as JSON. draftgate::Error
  // naming base + path for a status ≥ 400 (after the retries for 502 / 503 / 504), no answer
  // within the timeout, an oversized answer or one that is not JSON. `headers`: "Name: value".
  nlohmann::json call(const std::string& path, const nlohmann::json& body = nullptr,
                      const std::vector<std::string>& headers = {}) const;
  // POSTs to an endpoint that answers plain text (SGLang's /flush_cache); throws as `call` does,
  // with `what_it_needs` as the hint.
  void call_text(const std::string& path, const std::string& what_it_needs) const;
  // GETs a Prometheus text page (vLLM's /metrics), bounded in time and retried as `call` is, at
  // most kMaxScrapeBytes; `page`, when given, receives it as served.
  Scrape scrape(const std::string& path, std::string* page = nullptr) const;

 private:
  struct Answer {
    long status = 0;
    std::string body;
  };
  Answer exchange(const std::string& path, const std::string& body,
                  const std::vector<std::string>& headers,
                  std::uint64_t max_bytes = kMaxEngineAnswerBytes) const;

  std::string base_;
  long timeout_seconds_;
  std::string api_key_;
};

// Runs `send(i)` for i = 0…n−1 on `concurrency` threads, showing "tau measure: prompt i/n" on a
// terminal. The first exception stops the remaining work and is rethrown once every thread is
// joined (no thread outlives the call).
void for_each_request(std::size_t n, std::size_t concurrency,
                      const std::function<void(std::size_t)>& send);

}  // namespace draftgate::tau
