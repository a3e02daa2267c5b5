#define PCRE2_CODE_UNIT_WIDTH 8
#include "draftgate/tokenizer/split_regex.h"

#include <pcre2.h>

#include <cctype>

#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

constexpr const char* kWordInner = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";

// The escape `\c` (c a letter or digit) in PCRE2 syntax, inside a class or not; "" when
// unsupported.
std::string translate_escape(char c, bool in_class) {
  switch (c) {
    case 's':
      return "\\p{White_Space}";
    case 'S':
      return "\\P{White_Space}";
    case 'd':
      return "\\p{Nd}";
    case 'D':
      return "\\P{Nd}";
    case 'w':
      return in_class ? kWordInner : std::string("[") + kWordInner + "]";
    case 'W':
      return in_class ? "" : std::string("[^") + kWordInner + "]";
    case 'v':
      return "\\x{0B}";
    case 'r':
    case 'n':
    case 't':
    case 'f':
    case 'e':
    case 'a':
      return std::string("\\") + c;
    case 'A':
    case 'z':
      return in_class ? "" : std::string("\\") + c;
    default:
      return "";
  }
}

}  // namespace

std::string translate_oniguruma(const std::string& onig, const JsonPlace& at) {
  std::string out;
  int depth = 0;  // open groups
  bool in_class = false;
  std::size_t class_start = 0;
  const auto unsupported = [&](std::size_t i, const std::string& what) {
    at.fail("regex construct " + what + " at character " + std::to_string(i) + " is not supported",
            "draftgate translates Oniguruma's \\s \\S \\d \\D \\w \\W, \\p{…}, classes, groups, "
            "lookarounds, quantifiers and (?i:…)");
  };
  for (std::size_t i = 0; i < onig.size(); ++i) {
    const char c = onig[i];
    if (c == '\\') {
      if (i + 1 >= onig.size()) at.fail("regex ends with a lone backslash");
      const char e = onig[++i];
      if (e == 'p' || e == 'P') {
        const std::size_t close = onig.find('}', i);
        if (i + 1 >= onig.size() || onig[i + 1] != '{' || close == std::string::npos)
          unsupported(i - 1, "\\" + std::string(1, e) + " without {…}");
        out += '\\';
        out += onig.substr(i, close - i + 1);
        i = close;
      } else if (e == 'x') {
        out += "\\x";
      } else if (std::isalnum(static_cast<unsigned char>(e))) {
        const std::string t = translate_escape(e, in_class);
        if (t.empty()) unsupported(i - 1, "\\" + std::string(1, e));
        out += t;
      } else {
        out += '\\';
        out += e;  // an escaped symbol is that symbol in both engines
      }
      continue;
    }
    if (in_class) {
      if (c == ']' && i > class_start) {
        in_class = false;
        out += c;
      } else if (c == '[') {
        unsupported(i, "a nested class");
      } else {
        out += c;
      }
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      class_start = i + 1;
      if (class_start < onig.size() && onig[class_start] == '^') {
        out += '^';
        ++i;
        ++class_start;
      }
      if (class_start < onig.size() && onig[class_start] == ']') {
        out += "\\]";  // a leading ']' is a literal
        ++i;
        ++class_start;
      }
      continue;
    }
    if (c == '(') {
      // Groups pass through; flag groups other than (?i…) would change meaning.
      if (i + 1 < onig.size() && onig[i + 1] == '?' &&
          !(onig.compare(i, 4, "(?i:") == 0 || onig.compare(i, 4, "(?i)") == 0 ||
            onig.compare(i, 3, "(?:") == 0 || onig.compare(i, 3, "(?=") == 0 ||
            onig.compare(i, 3, "(?!") == 0 || onig.compare(i, 4, "(?<=") == 0 ||
            onig.compare(i, 4, "(?<!") == 0 || onig.compare(i, 3, "(?>") == 0))
        unsupported(i, "a group flag");
      if (onig.compare(i, 4, "(?i)") == 0) {
        out += "(?i)";
        i += 3;
        continue;
      }
      ++depth;
      out += c;
      continue;
    }
    if (c == ')') {
      if (depth == 0) at.fail("regex has an unmatched ')' at character " + std::to_string(i));
      --depth;
      out += c;
      continue;
    }
    out += c;
  }
  if (in_class) at.fail("regex has an unterminated character class");
  if (depth != 0) at.fail("regex has an unclosed group");
  return out;
}

std::string escape_literal(const std::string& literal) {
  std::string out;
  for (const char c : literal) {
    if (std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80) {
      out += c;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

struct SplitRegex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

SplitRegex::SplitRegex(const std::string& pattern, const JsonPlace& at)
    : impl_(std::make_unique<Impl>()), at_(at) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(err, message, sizeof message);
    at.fail("regex does not compile at character " + std::to_string(offset) + ": " +
            reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // without JIT it still matches, slower
}

SplitRegex::~SplitRegex() = default;

std::vector<std::pair<std::size_t, std::size_t>> SplitRegex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> found;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  if (md == nullptr) throw std::bad_alloc();
  // The iteration of the onig crate's FindMatches (and Rust regex's): an empty match moves the
  // next search one character on and is dropped when it touches the previous match's end. Empty
  // matches count: they split the text around them.
  std::size_t pos = 0;
  bool have_last = false;
  std::size_t last_end = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                               pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      at_.fail(std::string("regex matching failed: ") + reinterpret_cast<const char*>(message),
               "the text may need too much backtracking for this pattern");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const std::size_t start = ov[0], end = ov[1];
    if (end == start) {
      std::size_t len = 1;
      if (end < text.size()) decode_utf8(text, end, &len);
      pos = end + len;
      if (have_last && last_end == end) continue;
    } else {
      pos = end;
    }
    found.emplace_back(start, end);
    have_last = true;
    last_end = end;
  }
  pcre2_match_data_free(md);
  return found;
}

}  // namespace draftgate::tokenizer
