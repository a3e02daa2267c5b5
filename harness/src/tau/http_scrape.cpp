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
  std::uint64_t max_bytes = 0;
  bool too_large = false;
};

std::size_t append(char* data, std::size_t size, std::size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const std::size_t n = size * count;
  if (body->text.size() + n > body->max_bytes) {
    body->too_large = true;
    return 0;  // aborts the transfer
  }
  body->text.append(data, n);
  return n;
}

std::string mib(std::uint64_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                             : std::to_string(bytes) + " bytes";
}

// "http://host:port" of a URL: what a redirect may not leave.
std::string origin(const std::string& url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  return url.substr(0, url.find('/', scheme + 3));
}

constexpr int kMaxRedirects = 5;

}  // namespace

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

HttpResponse http_exchange(const HttpRequest& request, const HttpLimits& limits) {
  const std::string& url = request.url;
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) throw Error(url, "cannot initialise libcurl");
  const std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw Error(url, "cannot initialise libcurl");
  curl_slist* list = nullptr;
  for (const auto& h : request.headers) list = curl_slist_append(list, h.c_str());
  if (!request.json_body.empty()) list = curl_slist_append(list, "Content-Type: application/json");
  const std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(list, curl_slist_free_all);
  Body body;
  body.max_bytes = limits.max_bytes;
  char error[CURL_ERROR_SIZE] = "";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, std::min(10L, limits.timeout_seconds));
  curl_easy_setopt(c, CURLOPT_TIMEOUT, limits.timeout_seconds);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_bytes));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  // Every encoding libcurl decodes is offered and decoded (a proxy may compress unasked); the size
  // limit counts the decoded bytes.
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (!request.json_body.empty()) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.json_body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.json_body.size()));
  }
  // Redirects are followed on the server itself (an older vLLM sends /metrics to /metrics/), never
  // to another: its answers would be recorded as this URL's.
  CURLcode rc = CURLE_OK;
  long status = 0;
  for (int redirects = 0;; ++redirects) {
    body.text.clear();
    rc = curl_easy_perform(c);
    if (rc != CURLE_OK) break;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    char* location = nullptr;
    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
    if (status < 300 || status > 399 || location == nullptr) break;
    const std::string next = location;
    if (origin(next) != origin(url))
      throw Error(url, "redirects (HTTP " + std::to_string(status) + ") to another server, " + next,
                  "give that server's address as --url if it is the engine");
    if (redirects == kMaxRedirects)
      throw Error(url, "redirects more than " + std::to_string(kMaxRedirects) + " times");
    curl_easy_setopt(c, CURLOPT_URL, next.c_str());
  }
  if (body.too_large || rc == CURLE_FILESIZE_EXCEEDED)
    throw Error(url, "the answer is larger than " + mib(limits.max_bytes) + "; refused unread",
                "is this the engine's URL?");
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw Error(
        url, "no answer within " + std::to_string(limits.timeout_seconds) + " s",
        "is the server overloaded or stuck? (tau measure: --timeout S for long generations)");
  if (rc == CURLE_PARTIAL_FILE)
    throw Error(url, "the answer was cut off after " + std::to_string(body.text.size()) + " bytes",
                "the server or a proxy closed the connection early: is it restarting?");
  if (rc == CURLE_BAD_CONTENT_ENCODING)
    throw Error(url,
                std::string("the answer's Content-Encoding could not be decoded: ") +
                    (*error ? error : curl_easy_strerror(rc)),
                "is a proxy between here and the engine rewriting its answers?");
  // TLS failures in words of our own: the TLS library's text names its internals.
  if (rc == CURLE_SSL_CONNECT_ERROR)
    throw Error(url, "the TLS handshake failed",
                "is the server plain http? then give an http:// URL");
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
    throw Error(url,
                "the server's TLS certificate was not accepted (not signed by an authority this "
                "machine trusts, or not for this host name)",
                "give the server a certificate the system trusts (draftgate does not skip the "
                "check)");
  if (rc != CURLE_OK)
    throw Error(
        url, std::string("cannot reach the server: ") + (*error ? error : curl_easy_strerror(rc)),
        "is the server running, and is this its URL?");
  HttpResponse out;
  out.status = status;
  out.body = std::move(body.text);
  return out;
}

Scrape scrape_url(const std::string& url, std::string* body) {
  const std::string when = utc_now();
  const HttpResponse r = http_exchange({url, "", {}}, {60, kMaxScrapeBytes});
  if (r.status >= 400)
    throw Error(url, "HTTP status " + std::to_string(r.status),
                "is this the server's /metrics URL?");
  if (body) *body = r.body;
  return scrape_of(url, when, r.body);
}

Scrape scrape_of(const std::string& url, const std::string& when, const std::string& page) {
  const std::string source = url + " at " + when;
  return {source, parse_prometheus_text(page, source)};
}

}  // namespace draftgate::tau
