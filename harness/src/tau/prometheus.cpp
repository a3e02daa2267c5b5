// The Prometheus text exposition format (version 0.0.4), as prometheus_client writes it for
// vLLM's /metrics: "# HELP name text", "# TYPE name type", other "#" comments, and samples
// `name{label="value",…} value [timestamp]` with \\, \" and \n escapes in label values; and
// OpenMetrics' additions a proxy may pass on: float timestamps, exemplars, "# EOF".

#include "draftgate/tau/prometheus.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "draftgate/error.h"

namespace draftgate::tau {
namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

class LineParser {
 public:
  LineParser(std::string_view line, const std::string& file, std::size_t number)
      : s_(line), file_(file), number_(number) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file_, "line " + std::to_string(number_) + ": " + what,
                "expected the Prometheus text format of a /metrics scrape");
  }
  void skip_blanks() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool at_end() const { return i_ >= s_.size(); }
  std::string name(bool allow_colon) {
    const std::size_t start = i_;
    if (at_end() || !name_start(s_[i_]) || (!allow_colon && s_[i_] == ':'))
      fail("expected a metric or label name");
    while (i_ < s_.size() && name_char(s_[i_]) && (allow_colon || s_[i_] != ':')) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  std::string word() {
    skip_blanks();
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t') ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  std::map<std::string, std::string> labels() {
    std::map<std::string, std::string> out;
    ++i_;  // '{'
    for (;;) {
      skip_blanks();
      if (at_end()) fail("unterminated label set");
      if (s_[i_] == '}') {
        ++i_;
        return out;
      }
      const std::string key = name(false);
      skip_blanks();
      if (at_end() || s_[i_] != '=') fail("expected = after label " + key);
      ++i_;
      skip_blanks();
      if (at_end() || s_[i_] != '"') fail("expected a quoted value for label " + key);
      ++i_;
      std::string value;
      for (;;) {
        if (at_end()) fail("unterminated value of label " + key);
        const char c = s_[i_++];
        if (c == '"') break;
        if (c == '\\') {
          if (at_end()) fail("unterminated escape in label " + key);
          const char e = s_[i_++];
          if (e == 'n')
            value += '\n';
          else if (e == '\\' || e == '"')
            value += e;
          else
            fail("unknown escape \\" + std::string(1, e) + " in label " + key);
        } else {
          value += c;
        }
      }
      if (!out.emplace(key, value).second) fail("label " + key + " appears twice");
      skip_blanks();
      if (!at_end() && s_[i_] == ',') ++i_;
    }
  }
  std::size_t pos() const { return i_; }
  char peek() const { return s_[i_]; }
  void advance() { ++i_; }

 private:
  std::string_view s_;
  const std::string& file_;
  std::size_t number_;
  std::size_t i_ = 0;
};

double parse_value(const std::string& token, const LineParser& p) {
  if (token.empty()) p.fail("a sample without a value");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  // Go's ParseFloat, which Prometheus reads values with, takes a hexadecimal float only with its
  // p exponent ("0x1p4"); strtod would read "0x10" as 16.
  const std::size_t sign = token[0] == '+' || token[0] == '-' ? 1 : 0;
  const bool hex = token.size() > sign + 1 && token[sign] == '0' &&
                   (token[sign + 1] == 'x' || token[sign + 1] == 'X');
  if (end != token.c_str() + token.size() ||
      (hex && token.find_first_of("pP") == std::string::npos))
    p.fail("\"" + token.substr(0, 40) + "\" is not a number");
  return v;  // overflow gives ±Inf, refused where the value is used
}

// The optional timestamp after a value: whole milliseconds in the text format 0.0.4, seconds with
// a fraction in OpenMetrics. Not used; a word that is neither is refused.
void skip_timestamp(LineParser& p) {
  p.skip_blanks();
  if (p.at_end() || p.peek() == '#') return;
  const std::string timestamp = p.word();
  char* end = nullptr;
  const double t = std::strtod(timestamp.c_str(), &end);
  if (timestamp.find_first_not_of("-+.0123456789eE") != std::string::npos ||
      end != timestamp.c_str() + timestamp.size() || !std::isfinite(t))
    p.fail("\"" + timestamp.substr(0, 40) + "\" is not a timestamp");
}

}  // namespace

PromText parse_prometheus_text(std::string_view text, const std::string& file) {
  PromText out;
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineParser p(line, file, number);
    p.skip_blanks();
    if (p.at_end()) continue;
    if (p.peek() == '#') {
      const std::string_view rest = line.substr(p.pos());
      if (rest.rfind("# TYPE ", 0) == 0) {
        LineParser t(rest.substr(7), file, number);
        t.skip_blanks();
        const std::string family = t.name(true);
        out.types[family] = t.word();
      }
      continue;  // HELP and other comments
    }
    PromSample sample;
    sample.line = number;
    sample.name = p.name(true);
    if (!p.at_end() && p.peek() == '{') sample.labels = p.labels();
    if (p.at_end() || (p.peek() != ' ' && p.peek() != '\t'))
      p.fail("expected a space and a value after " + sample.name);
    sample.value = parse_value(p.word(), p);
    skip_timestamp(p);
    // OpenMetrics' exemplar, "# {labels} value [timestamp]": read to be well formed, not used.
    p.skip_blanks();
    if (!p.at_end() && p.peek() == '#') {
      p.advance();
      p.skip_blanks();
      if (p.at_end() || p.peek() != '{') p.fail("expected an exemplar's {labels} after #");
      p.labels();
      parse_value(p.word(), p);
      skip_timestamp(p);
    }
    if (!p.word().empty()) p.fail("unexpected text after the sample's value");
    out.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace draftgate::tau
