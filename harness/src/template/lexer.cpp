// Jinja2's lexer (jinja2/lexer.py, 3.1) with trim_blocks and lstrip_blocks, as transformers'
// _compile_jinja_template configures it.

#include "draftgate/template/lexer.h"

#include <cctype>
#include <cstdio>
#include <cstring>

#include "draftgate/template/value.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::chat_template {
namespace {

bool is_space_at(const std::string& s, std::size_t k, std::size_t* len) {
  std::size_t n = 0;
  const char32_t c = tokenizer::decode_utf8(s, k, &n);
  *len = n;
  return py_isspace(c);
}

// "U+65E5" of the character at byte k (the template is valid UTF-8: checked on reading).
std::string code_point_at(const std::string& s, std::size_t k) {
  std::size_t n = 0;
  char hex[16];
  std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(tokenizer::decode_utf8(s, k, &n)));
  return hex;
}

// Python's str.rstrip() (Unicode whitespace).
std::string rstrip_ws(const std::string& s) {
  std::size_t end = 0;
  for (std::size_t k = 0; k < s.size();) {
    std::size_t len = 0;
    if (!is_space_at(s, k, &len)) end = k + len;
    k += len;
  }
  return s.substr(0, end);
}

// Whether s[from:] is non-empty and all whitespace (`\s+` fullmatch).
bool all_space(const std::string& s, std::size_t from) {
  if (from >= s.size()) return false;
  for (std::size_t k = from; k < s.size();) {
    std::size_t len = 0;
    if (!is_space_at(s, k, &len)) return false;
    k += len;
  }
  return true;
}

// Skips `\s*` from pos; returns the new position.
std::size_t skip_space(const std::string& s, std::size_t pos) {
  while (pos < s.size()) {
    std::size_t len = 0;
    if (!is_space_at(s, pos, &len)) break;
    pos += len;
  }
  return pos;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string literal's body decoded as Python's "unicode-escape" codec does.
std::string decode_escapes(const std::string& raw, int line) {
  std::string out;
  for (std::size_t k = 0; k < raw.size(); ++k) {
    if (raw[k] != '\\' || k + 1 == raw.size()) {
      out += raw[k];
      continue;
    }
    const char e = raw[++k];
    switch (e) {
      case '\n':
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        char32_t cp = 0;
        for (std::size_t d = 0; d < digits; ++d) {
          const int h = k + 1 + d < raw.size() ? hex_value(raw[k + 1 + d]) : -1;
          if (h < 0)
            fail(ErrorKind::kSyntax, line, std::string("truncated \\") + e + " escape in a string");
          cp = cp * 16 + static_cast<char32_t>(h);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          fail(ErrorKind::kUnsupported, line, "a string escape that is not a Unicode scalar value");
        tokenizer::append_utf8(out, cp);
        k += digits;
        break;
      }
      case 'N':
        fail(ErrorKind::kUnsupported, line, "the \\N{...} string escape is not supported");
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = static_cast<char32_t>(e - '0');
          for (int d = 0; d < 2 && k + 1 < raw.size() && raw[k + 1] >= '0' && raw[k + 1] <= '7';
               ++d)
            cp = cp * 8 + static_cast<char32_t>(raw[++k] - '0');
          tokenizer::append_utf8(out, cp);
        } else {
          out += '\\';  // an unknown escape keeps its backslash
          out += e;
        }
    }
  }
  return out;
}

const char* const kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/",
                                  "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                  "=",  ".",  ":",  "|",  ",",  ";",  "<", ">"};

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const std::size_t found = src_.find('{', pos_);
      std::size_t tag = std::string::npos;
      for (std::size_t k = found; k != std::string::npos && k + 1 < src_.size();
           k = src_.find('{', k + 1)) {
        const char n = src_[k + 1];
        if (n == '{' || n == '%' || n == '#') {
          tag = k;
          break;
        }
      }
      std::string text =
          src_.substr(pos_, tag == std::string::npos ? std::string::npos : tag - pos_);
      if (tag == std::string::npos) {
        emit_data(text);
        pos_ = src_.size();
        break;
      }
      const char type = src_[tag + 1];
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign == '-') {
        text = rstrip_ws(text);
      } else if (sign != '+' && type != '{') {
        // lstrip_blocks: only whitespace between the line's start and a block or comment tag.
        const std::size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((l_pos > 0 || line_starting) && all_space(text, l_pos)) text.resize(l_pos);
      }
      emit_data(text);
      pos_ = tag + 2 + ((sign == '-' || (sign == '+' && type != '{')) ? 1 : 0);
      if (type == '#') {
        comment(tag);
      } else {
        tag_tokens(type == '{');
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({Token::Kind::kEnd, "", line_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  int line_of(std::size_t pos) {
    for (; counted_ < pos && counted_ < src_.size(); ++counted_)
      if (src_[counted_] == '\n') ++line_;
    return line_;
  }

  void emit_data(const std::string& text) {
    if (!text.empty()) tokens_.push_back({Token::Kind::kData, text, line_of(pos_)});
  }

  // After an end delimiter: `-` skips all whitespace, `+` nothing, else trim_blocks one newline.
  void after_end(char sign, bool block) {
    if (sign == '-')
      pos_ = skip_space(src_, pos_);
    else if (sign != '+' && block && pos_ < src_.size() && src_[pos_] == '\n')
      ++pos_;
  }

  void comment(std::size_t tag) {
    const std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos)
      fail(ErrorKind::kSyntax, line_of(tag), "missing end of comment tag");
    const char sign =
        end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    pos_ = end + 2;
    after_end(sign, true);
  }

  void tag_tokens(bool variable) {
    const int begin_line = line_of(pos_);
    tokens_.push_back(
        {variable ? Token::Kind::kVarBegin : Token::Kind::kBlockBegin, "", begin_line});
    const std::string close = variable ? "}}" : "%}";
    int open_brackets =
        0;  // inside (), [], {} an end delimiter is not one (the lexer's balancing stack)
    for (;;) {
      pos_ = skip_space(src_, pos_);
      if (pos_ >= src_.size())
        fail(ErrorKind::kSyntax, begin_line,
             std::string("unexpected end of template, expected '") + close + "'");
      const int line = line_of(pos_);
      if (open_brackets == 0 && (src_[pos_] == '-' || src_[pos_] == '+') &&
          src_.compare(pos_ + 1, 2, close) == 0) {
        const char sign = src_[pos_];
        if (sign == '+' && variable) fail(ErrorKind::kSyntax, line, "unexpected '+'");
        pos_ += 3;
        tokens_.push_back({variable ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "", line});
        after_end(sign, !variable);
        return;
      }
      if (open_brackets == 0 && src_.compare(pos_, 2, close) == 0) {
        pos_ += 2;
        tokens_.push_back({variable ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "", line});
        after_end('\0', !variable);
        return;
      }
      const char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t e = pos_;
        while (e < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
          ++e;
        if (e < src_.size() && static_cast<unsigned char>(src_[e]) >= 0x80)
          fail(ErrorKind::kUnsupported, line, "a non-ASCII name is not supported");
        tokens_.push_back({Token::Kind::kName, src_.substr(pos_, e - pos_), line});
        pos_ = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        number(line);
      } else if (c == '\'' || c == '"') {
        string_literal(c, line);
      } else {
        bool matched = false;
        for (const char* op : kOperators) {
          const std::string o(op);
          if (src_.compare(pos_, o.size(), o) == 0) {
            tokens_.push_back({Token::Kind::kOp, o, line});
            if (o == "(" || o == "[" || o == "{") ++open_brackets;
            if ((o == ")" || o == "]" || o == "}") && open_brackets > 0) --open_brackets;
            pos_ += o.size();
            matched = true;
            break;
          }
        }
        if (!matched && static_cast<unsigned char>(c) >= 0x80)  // never a raw byte in a message
          fail(ErrorKind::kUnsupported, line,
               "a non-ASCII character outside a string (" + code_point_at(src_, pos_) +
                   "): names of letters beyond ASCII are not supported");
        if (!matched) fail(ErrorKind::kSyntax, line, std::string("unexpected char '") + c + "'");
      }
    }
  }

  void number(int line) {
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() &&
        std::strchr("xXoObB", src_[pos_ + 1]) != nullptr)
      fail(ErrorKind::kUnsupported, line,
           "hexadecimal, octal and binary integer literals (0x1F, 0o17, 0b101) are not supported");
    std::size_t e = pos_;
    auto digits = [&] {
      while (e < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
        ++e;
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      ++e;
      digits();
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
        e = x;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (std::size_t k = pos_; k < e; ++k)
      if (src_[k] != '_') text += src_[k];
    tokens_.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInteger, text, line});
    pos_ = e;
  }

  void string_literal(char quote, int line) {
    std::size_t e = pos_ + 1;
    while (e < src_.size() && src_[e] != quote) e += src_[e] == '\\' ? 2 : 1;
    if (e >= src_.size()) fail(ErrorKind::kSyntax, line, "unterminated string");
    tokens_.push_back(
        {Token::Kind::kString, decode_escapes(src_.substr(pos_ + 1, e - pos_ - 1), line), line});
    pos_ = e + 1;
  }

  std::string src_;
  std::size_t pos_ = 0;
  std::size_t counted_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

// Newlines normalized to "\n" and one trailing newline dropped (keep_trailing_newline=False).
std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\r') {
      out += '\n';
      if (k + 1 < s.size() && s[k + 1] == '\n') ++k;
    } else {
      out += s[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> lex(const std::string& source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace draftgate::chat_template
