#include "draftgate/tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace draftgate::tokenizer {
namespace {

// The length of the valid UTF-8 sequence at `pos`, or 0 when none starts there; `max_prefix`
// receives the length of the longest valid prefix (the maximal subpart from_utf8_lossy replaces).
std::size_t sequence_at(std::string_view s, std::size_t pos, std::size_t* max_prefix) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[pos + i]); };
  const std::size_t left = s.size() - pos;
  const unsigned char c = b(0);
  *max_prefix = 1;
  if (c < 0x80) return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range (Unicode Table 3-7)
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t i = 1; i < need; ++i) {
    if (i >= left) return 0;
    const unsigned char x = b(i);
    const bool ok = i == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
    if (!ok) return 0;
    *max_prefix = i + 1;
  }
  return need;
}

}  // namespace

std::size_t invalid_utf8_at(std::string_view text) {
  std::size_t pos = 0, prefix = 0;
  while (pos < text.size()) {
    const std::size_t n = sequence_at(text, pos, &prefix);
    if (n == 0) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

char32_t decode_utf8(std::string_view text, std::size_t pos, std::size_t* length) {
  const auto b = [&](std::size_t i) { return static_cast<char32_t>(text[pos + i]) & 0xFF; };
  const char32_t c = b(0);
  if (c < 0x80) {
    *length = 1;
    return c;
  }
  if (c < 0xE0) {
    *length = 2;
    return ((c & 0x1F) << 6) | (b(1) & 0x3F);
  }
  if (c < 0xF0) {
    *length = 3;
    return ((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  }
  *length = 4;
  return ((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0, prefix = 0;
  while (pos < bytes.size()) {
    const std::size_t n = sequence_at(bytes, pos, &prefix);
    if (n > 0) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out += "\xEF\xBF\xBD";
      pos += prefix;
    }
  }
  return out;
}

std::string normalize(std::string_view text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNFD:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNFKC:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNFKD:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  if (text.empty()) return {};
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out,
                                          static_cast<utf8proc_option_t>(options));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0) throw std::bad_alloc();  // input is validated first: only memory can fail here
  return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

bool is_white_space(char32_t c) {
  // PropList.txt White_Space (unchanged since Unicode 6.3).
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_word_char(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // Other_Alphabetic symbols: circled and squared Latin letters.
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
      (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189))
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace draftgate::tokenizer
