#include "draftgate/tau/engine_http.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"
#include "draftgate/progress.h"
#include "draftgate/tau/http_scrape.h"

namespace draftgate::tau {
namespace {

// A gateway or the engine busy for now, or a rate limit (429): worth a retry.
bool transient(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// An error answer's own message, when it has one ({"message": …} as SGLang's ErrorResponse and
// vLLM's write it, or {"error": {"message": …}}), cut to one short phrase.
std::string server_message(const std::string& body) {
  nlohmann::json doc;
  try {  // strict: depth-capped, so a hostile error page cannot exhaust the stack
    doc = io::parse_json_strict(body, "", kMaxEngineAnswerBytes);
  } catch (const Error&) {
    return "";
  }
  const nlohmann::json* m = nullptr;
  if (doc.is_object() && doc.contains("message")) m = &doc.at("message");
  if (doc.is_object() && doc.contains("error") && doc.at("error").is_object() &&
      doc.at("error").contains("message"))
    m = &doc.at("error").at("message");
  if (!m || !m->is_string()) return "";
  std::string s = one_line(m->get<std::string>());
  if (s.size() > 200) s = s.substr(0, 200) + "…";
  return ": \"" + s + "\"";
}

}  // namespace

EngineHttp::EngineHttp(std::string base, long timeout_seconds, std::string api_key)
    : base_(std::move(base)), timeout_seconds_(timeout_seconds), api_key_(std::move(api_key)) {
  while (!base_.empty() && base_.back() == '/') base_.pop_back();
}

EngineHttp::Answer EngineHttp::exchange(const std::string& path, const std::string& body,
                                        const std::vector<std::string>& headers,
                                        std::uint64_t max_bytes) const {
  const std::string where = url(path);
  std::vector<std::string> sent = headers;
  if (!api_key_.empty()) sent.push_back("Authorization: Bearer " + api_key_);
  HttpResponse r;
  for (int attempt = 0;; ++attempt) {
    r = http_exchange({where, body, sent}, {timeout_seconds_, max_bytes});
    if (!transient(r.status) || attempt == kTransientRetries) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
  }
  if (r.status >= 400)
    throw Error(
        where,
        "HTTP status " + std::to_string(r.status) + server_message(r.body) +
            (transient(r.status) ? " after " + std::to_string(kTransientRetries) + " retries" : ""),
        transient(r.status)
            ? "the server is overloaded, rate-limiting or restarting; try again later"
        : r.status != 401 ? "is this the engine's URL, and is it serving?"
        : api_key_.empty()
            ? "the server wants an API key (its --api-key): put it in an environment variable "
              "and pass --api-key-env NAME"
            : "the server refused the API key sent: is it the one the server was started with?");
  return {r.status, std::move(r.body)};
}

nlohmann::json EngineHttp::call(const std::string& path, const nlohmann::json& body,
                                const std::vector<std::string>& headers) const {
  const Answer a = exchange(path, body.is_null() ? "" : body.dump(), headers);
  try {
    return io::parse_json_strict(a.body, url(path), kMaxEngineAnswerBytes);
  } catch (const Error& e) {
    throw Error(url(path), "the answer is not JSON (" + e.problem() + ")",
                "is this the engine's URL?");
  }
}

void EngineHttp::call_text(const std::string& path, const std::string& what_it_needs) const {
  try {
    exchange(path, "{}", {});
  } catch (const Error& e) {
    throw Error(e.file(), e.problem(), what_it_needs);
  }
}

Scrape EngineHttp::scrape(const std::string& path, std::string* page) const {
  const std::string when = utc_now();
  Answer a = exchange(path, "", {}, kMaxScrapeBytes);
  Scrape scraped = scrape_of(url(path), when, a.body);
  if (page) *page = std::move(a.body);
  return scraped;
}

void for_each_request(std::size_t n, std::size_t concurrency,
                      const std::function<void(std::size_t)>& send) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards first_error, done and the progress line
  std::exception_ptr first_error;
  std::size_t done = 0;
  Progress progress("tau measure", "prompt", static_cast<std::int64_t>(n));
  const auto work = [&] {
    for (std::size_t i; !failed && (i = next++) < n;) {
      try {
        send(i);
        const std::lock_guard<std::mutex> lock(mutex);
        progress.update(static_cast<std::int64_t>(++done));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < std::min(concurrency, n); ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace draftgate::tau
