#include "draftgate/io/json_util.h"

#include <limits>
#include <unordered_set>
#include <vector>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/input_file.h"

namespace draftgate::io {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The DOM builder of nlohmann with four checks in front of it: nesting depth, integers beyond
// int64, duplicate keys (one hash set per open object: linear, unlike the callback parser, which
// rescans the parent at every object end) and parse errors as draftgate errors with the library's
// prefix removed.
class StrictSax {
 public:
  StrictSax(json& root, const std::string& file) : dom_(root), file_(file) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  // Every reader takes integers as int64: a larger one would wrap to a negative value and be
  // reported (or used) as that.
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<json::number_unsigned_t>(std::numeric_limits<std::int64_t>::max()))
      too_large(std::to_string(v));
    return dom_.number_unsigned(v);
  }
  // An integer literal beyond uint64 arrives here as a float (1e+22 for 10000000000000000000000):
  // a value that changed would be rendered, compared or reported as another number.
  bool number_float(json::number_float_t v, const json::string_t& s) {
    if (s.find_first_of(".eE") == std::string::npos) too_large(s);
    return dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    enter();
    keys_.emplace_back();
    member_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (!keys_.back().insert(k).second)
      throw Error(file_, "duplicate JSON key " + json_excerpt(json(k)));
    member_.back() = k;
    return dom_.key(k);
  }
  bool end_object() {
    keys_.pop_back();
    member_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    enter();
    return dom_.start_array(n);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    std::string what = e.what();
    if (const auto close = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    // "…; last read: '<token>'" can quote a long or binary token: keep the reason only.
    if (const auto last = what.find("; last read:"); last != std::string::npos)
      what = what.substr(0, last);
    // "parse error at line L, column C: syntax error while parsing value - invalid literal" is
    // the library's wording: the place and the reason are kept, in our words around them.
    std::string place;
    const std::string prefix = "parse error at ";
    if (const auto colon = what.find(": ");
        what.rfind(prefix, 0) == 0 && colon != std::string::npos) {
      place = " (" + what.substr(prefix.size(), colon - prefix.size()) + ")";
      what = what.substr(colon + 2);
    }
    if (const auto dash = what.find(" - "); dash != std::string::npos) what = what.substr(dash + 3);
    throw Error(file_, "invalid JSON at byte " + std::to_string(position) + place + ": " +
                           what.substr(0, 160));
  }

 private:
  [[noreturn]] void too_large(const std::string& digits) const {
    throw Error(
        file_,
        "integer " + digits.substr(0, 40) + (digits.size() > 40 ? "…" : "") +
            " does not fit a 64-bit signed integer" +
            (member_.empty() ? "" : " (under key " + json_excerpt(json(member_.back())) + ")"),
        "draftgate reads JSON integers as int64; write a larger number as a string");
  }
  void enter() {
    if (++depth_ > kMaxJsonDepth)
      throw Error(file_, "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& file_;
  std::vector<std::unordered_set<std::string>> keys_;
  std::vector<std::string> member_;  // each open object's current key: where a number is
  int depth_ = 0;
};

void excerpt_into(const json& v, std::string& out, std::size_t budget, int depth) {
  if (out.size() >= budget) return;
  auto text = [&](const std::string& s) {
    // Never more of a string than the budget left, so a 200 MB string costs what is printed.
    const std::string head = s.substr(0, budget - out.size() + 1);
    out += json(head).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  switch (v.type()) {
    case json::value_t::object:
    case json::value_t::array: {
      const bool object = v.is_object();
      if (depth >= 3) {
        out += object ? "{…}" : "[…]";
        return;
      }
      out += object ? '{' : '[';
      bool first = true;
      for (auto it = v.begin(); it != v.end() && out.size() < budget; ++it) {
        out += first ? "" : ", ";
        first = false;
        if (object) {
          text(it.key());
          out += ": ";
        }
        excerpt_into(it.value(), out, budget, depth + 1);
      }
      out += object ? '}' : ']';
      return;
    }
    case json::value_t::string:
      text(v.get_ref<const std::string&>());
      return;
    default:
      out += v.dump();
  }
}

// Appends `s` with every byte that is not part of a well-formed UTF-8 sequence written as \xNN.
std::string escape_invalid_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80           ? 1
                    : (c >> 5) == 0x6  ? 2
                    : (c >> 4) == 0xe  ? 3
                    : (c >> 3) == 0x1e ? 4
                                       : 0;
    bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xc2);
    for (std::size_t k = 1; ok && k < n; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok && n == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
    }
    if (ok && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90) && c <= 0xf4;
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
      ++i;
    }
  }
  return out;
}

// A copy of `v` whose strings and keys are valid UTF-8 (depth is bounded by what draftgate
// builds).
json with_valid_utf8(const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      json out = json::object();
      for (auto it = v.begin(); it != v.end(); ++it)
        out[escape_invalid_utf8(it.key())] = with_valid_utf8(it.value());
      return out;
    }
    case json::value_t::array: {
      json out = json::array();
      for (const auto& e : v) out.push_back(with_valid_utf8(e));
      return out;
    }
    case json::value_t::string:
      return escape_invalid_utf8(v.get_ref<const std::string&>());
    default:
      return v;
  }
}

}  // namespace

json parse_json_strict(std::string_view text, const std::string& file, std::uint64_t max_bytes) {
  if (text.size() > max_bytes)
    throw Error(file, "JSON text is " + std::to_string(text.size()) + " bytes, over the " +
                          std::to_string(max_bytes) + "-byte limit");
  // nlohmann stops at a NUL byte as if the text ended there; JSON text never holds one.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(file, "invalid JSON: a NUL byte at byte " + std::to_string(nul));
  json root;
  StrictSax sax(root, file);
  json::sax_parse(text.begin(), text.end(), &sax);
  return root;
}

json read_json_file(const fs::path& path, std::uint64_t max_bytes) {
  return parse_json_strict(read_input_file(path, max_bytes, "JSON"), path.string(), max_bytes);
}

std::string json_excerpt(const json& value, std::size_t max_chars) {
  std::string out;
  excerpt_into(value, out, max_chars, 0);
  return at_most(std::move(out), max_chars);
}

std::string dump_json(const json& value, int indent) {
  // Walk only when needed: almost every report is valid UTF-8 already.
  try {
    return value.dump(indent);
  } catch (const json::type_error&) {
    return with_valid_utf8(value).dump(indent);
  }
}

}  // namespace draftgate::io
