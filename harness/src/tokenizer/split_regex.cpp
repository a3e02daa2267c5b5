#define PCRE2_CODE_UNIT_WIDTH 8
#include "draftgate/tokenizer/split_regex.h"

#include <pcre2.h>

#include <cctype>
#include <vector>

#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

// Oniguruma's Unicode \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation
// (make_unicode_property_data.py's add_posix_props, "word"): the letter-like numbers and symbols
// (Ⅻ, Ⓐ) are Alphabetic. Checked against the library through its npm binding, where it also took
// ² (No, in Latin-1; likely Latin-1's other superscripts and fractions too) as a word
// character: those are left.
constexpr const char* kWordInner = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";

bool pcre2_compiles(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  pcre2_code_free(code);
  return code != nullptr;
}

// \p{name} / \P{name} / \p{^name} as Oniguruma reads it, in PCRE2's syntax; "" when PCRE2 has no
// such property. A script name is the script (Oniguruma's \p{Han}); PCRE2 10.40 on reads a bare
// script name as its Script_Extensions, which hold more (、 and 。 are Han, Hiragana, Katakana...),
// so it is written sc:name. Oniguruma has no name=value or prefixed forms.
std::string translate_property(char p, std::string name) {
  bool negated = p == 'P';
  if (!name.empty() && name[0] == '^') {
    negated = !negated;
    name.erase(0, 1);
  }
  if (name.empty() || name.find_first_of("=:") != std::string::npos) return "";
  const std::string sign = negated ? "\\P{" : "\\p{";
  if (pcre2_compiles("\\p{sc:" + name + "}")) return sign + "sc:" + name + "}";
  if (pcre2_compiles("\\p{" + name + "}")) return sign + name + "}";
  return "";
}

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
  int depth = 0;                      // open groups
  std::vector<int> option_groups{0};  // per open group (and the pattern): (?i) groups to close
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
        const std::string name = onig.substr(i + 2, close - i - 2);
        const std::string t = translate_property(e, name);
        if (t.empty()) unsupported(i - 1, "the property \\" + std::string(1, e) + "{" + name + "}");
        out += t;
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
      } else if (c == '&' && i + 1 < onig.size() && onig[i + 1] == '&') {
        unsupported(i, "a class intersection &&");  // PCRE2 reads two literal '&'
      } else {
        out += c;
      }
      continue;
    }
    if (c == '{') {
      // An interval: Oniguruma's {,m} is {0,m}, which PCRE2 10.42 reads as text; its {n}? is an
      // optional {n} and {n,m}+ a repeated one, where PCRE2 reads a lazy and a possessive one.
      std::size_t k = i + 1;
      const auto digits = [&] {
        const std::size_t from = k;
        while (k < onig.size() && std::isdigit(static_cast<unsigned char>(onig[k]))) ++k;
        return k > from;
      };
      const bool low = digits();
      const bool comma = k < onig.size() && onig[k] == ',';
      if (comma) ++k;
      const bool high = comma && digits();
      if (k < onig.size() && onig[k] == '}' && (low || high)) {
        const char after = k + 1 < onig.size() ? onig[k + 1] : '\0';
        if (after == '+') unsupported(i, "an interval followed by + (Oniguruma repeats it)");
        if (after == '?' && !comma) unsupported(i, "{n}? (Oniguruma makes the repeat optional)");
        out += low ? onig.substr(i, k - i + 1) : "{0" + onig.substr(i + 1, k - i);
        i = k;
        continue;
      }
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
        // To the end of the enclosing group, its later alternatives inside the option's scope
        // (Oniguruma reads x(?i)y|z as x(?i:y|z); PCRE2 would take z as an alternative to xy).
        out += "(?i:";
        ++option_groups[static_cast<std::size_t>(depth)];
        i += 3;
        continue;
      }
      ++depth;
      option_groups.push_back(0);
      out += c;
      continue;
    }
    if (c == ')') {
      if (depth == 0) at.fail("regex has an unmatched ')' at character " + std::to_string(i));
      out.append(static_cast<std::size_t>(option_groups.back()), ')');
      option_groups.pop_back();
      --depth;
      out += c;
      continue;
    }
    out += c;
  }
  if (in_class) at.fail("regex has an unterminated character class");
  if (depth != 0) at.fail("regex has an unclosed group");
  out.append(static_cast<std::size_t>(option_groups.back()), ')');
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
