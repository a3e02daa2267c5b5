#include "draftgate/tau/http_scrape.h"

#include <curl/curl.h>

#include <chrono>
#include <ctime>
#include <memory>

#include "draftgate/error.h"

namespace draftgate::tau {
namespace {

struct Body {
  std::string text;
  bool too_large = false;
};

std::size_t append(char* data, std::size_t size, std::size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const std::size_t n = size * count;
  if (body->text.size() + n > kMaxScrapeBytes) {
    body->too_large = true;
    return 0;  // aborts the transfer
  }
  body->text.append(data, n);
  return n;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Scrape scrape_url(const std::string& url) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) throw Error(url, "cannot initialise libcurl");
  const std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw Error(url, "cannot initialise libcurl");
  Body body;
  char error[CURL_ERROR_SIZE] = "";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(kMaxScrapeBytes));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const std::string when = utc_now();
  const CURLcode rc = curl_easy_perform(c);
  if (body.too_large || rc == CURLE_FILESIZE_EXCEEDED)
    throw Error(url, "the response is larger than " + std::to_string(kMaxScrapeBytes >> 20) +
                         " MiB; this is not a /metrics page");
  if (rc != CURLE_OK)
    throw Error(url, std::string("cannot scrape: ") + (*error ? error : curl_easy_strerror(rc)),
                "is the server running, and is this its /metrics URL?");
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 400)
    throw Error(url, "HTTP status " + std::to_string(status), "is this the server's /metrics URL?");
  const std::string source = url + " at " + when;
  return {source, parse_prometheus_text(body.text, source)};
}

}  // namespace draftgate::tau
