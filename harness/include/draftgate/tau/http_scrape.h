#pragma once
// Scraping a live vLLM /metrics endpoint (libcurl), for `tau import --vllm-metrics-url URL --run`.

#include <string>

#include "draftgate/tau/vllm_metrics.h"

namespace draftgate::tau {

// GETs `url` (http or https only; no redirects to other schemes) and parses the body as Prometheus
// text. Bounded: 10 s to connect, 60 s in all, at most kMaxScrapeBytes. The scrape's source is
// "URL at TIME" (UTC). draftgate::Error naming the URL on a refused connection, a timeout, an HTTP
// status of 400 or more, an oversized body or a body that is not the text format.
Scrape scrape_url(const std::string& url);

}  // namespace draftgate::tau
