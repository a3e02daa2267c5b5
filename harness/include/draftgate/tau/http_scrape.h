#pragma once
// HTTP to a serving engine (libcurl): scraping vLLM's /metrics for `tau import --vllm-metrics-url`,
// and the bounded requests `tau measure` sends (http and https only, every request capped in time
// and in the size of its answer).

#include <cstdint>
#include <string>
#include <vector>

#include "draftgate/tau/vllm_metrics.h"

namespace draftgate::tau {

struct HttpLimits {
  long timeout_seconds = 60;  // the whole exchange; connecting gets at most 10 s of it
  std::uint64_t max_bytes = kMaxScrapeBytes;  // a larger answer is refused, not read
};

struct HttpRequest {
  std::string url;
  std::string json_body;             // POSTed as application/json; empty: a GET
  std::vector<std::string> headers;  // "Name: value"
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

// Sends `request`. draftgate::Error naming the URL on a refused connection, a timeout ("no answer
// within S s") or an answer over max_bytes; any HTTP status is returned for the caller to judge.
HttpResponse http_exchange(const HttpRequest& request, const HttpLimits& limits);

// GETs `url` (http or https only; no redirects to other schemes) and parses the body as Prometheus
// text. Bounded: 10 s to connect, 60 s in all, at most kMaxScrapeBytes. The scrape's source is
// "URL at TIME" (UTC). draftgate::Error naming the URL on a refused connection, a timeout, an HTTP
// status of 400 or more, an oversized body or a body that is not the text format. `body`, when
// given, receives the page as served.
Scrape scrape_url(const std::string& url, std::string* body = nullptr);

// The current UTC time as a scrape's source names it (2026-12-07T10:00:00Z).
std::string utc_now();

// `page`, fetched from `url` at `when` (utc_now() before the request), parsed as Prometheus text;
// the source is "URL at WHEN".
Scrape scrape_of(const std::string& url, const std::string& when, const std::string& page);

}  // namespace draftgate::tau
