#pragma once
// Text forms of id lists, shapes and measured numbers shared by messages, metadata and reports.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace draftgate {

// "1,9,17" (no spaces: also the metadata form of tap lists and token ids).
inline std::string format_ids(const std::vector<std::int64_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

// format_ids read back: nullopt unless `text` is integers joined by commas, spaces around each
// allowed ("1x", "", "1,,2", a trailing comma and an id beyond int64 are not).
inline std::optional<std::vector<std::int64_t>> parse_ids(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    std::size_t a = from, b = comma;  // the element, spaces around it dropped
    while (a < b && text[a] == ' ') ++a;
    while (b > a && text[b - 1] == ' ') --b;
    std::int64_t id = 0;
    const auto [end, error] = std::from_chars(text.data() + a, text.data() + b, id);
    if (a == b || error != std::errc() || end != text.data() + b) return std::nullopt;
    ids.push_back(id);
    if (comma == text.size()) return ids;
    from = comma + 1;
  }
}

// "a, b, c".
inline std::string format_list(const std::vector<std::string>& items) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s;
}

// "[4096, 2560]".
inline std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A measured number in a message: `significant` significant digits ("0.00123", "3.49e+07").
inline std::string format_number(double v, int significant = 3) {
  std::ostringstream s;
  s.precision(significant);
  s << v;
  return s.str();
}

// `s` cut to at most `max_bytes` (never inside a UTF-8 sequence) with "…" appended when cut.
inline std::string at_most(std::string s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  s.resize(max_bytes);
  while (!s.empty() && (static_cast<unsigned char>(s.back()) >> 6) == 0x2) s.pop_back();
  if (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xc0) s.pop_back();
  return s + "…";
}

}  // namespace draftgate
