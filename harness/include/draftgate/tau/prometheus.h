#pragma once
// The Prometheus text exposition format (version 0.0.4), as vLLM's /metrics serves it.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace draftgate::tau {

// One sample line of the Prometheus text exposition format (version 0.0.4).
struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;  // NaN / ±Inf kept as parsed; the importers refuse them where they read
  std::size_t line = 0;
};

struct PromText {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // family → "# TYPE" (counter, gauge, …)
};

// Parses the text format: # HELP / # TYPE / other comments, label sets with escapes, values
// (floats, NaN, +Inf, -Inf), optional timestamps. draftgate::Error naming `file` and the line
// otherwise.
PromText parse_prometheus_text(std::string_view text, const std::string& file);

}  // namespace draftgate::tau
