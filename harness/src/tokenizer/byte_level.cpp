#include "draftgate/tokenizer/byte_level.h"

#include <array>

#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

struct Alphabet {
  std::array<std::string, 256> of_byte;
  std::array<int, 512> byte_of{};  // every character lies below U+0200
  Alphabet() {
    byte_of.fill(-1);
    const auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = printable(b) ? static_cast<char32_t>(b) : next++;
      append_utf8(of_byte[static_cast<std::size_t>(b)], c);
      byte_of[c] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string bytes_to_alphabet(std::string_view bytes) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) out += a.of_byte[static_cast<unsigned char>(b)];
  return out;
}

int alphabet_byte(char32_t c) { return c < 512 ? alphabet().byte_of[c] : -1; }

ByteLevelFlags byte_level_flags(const nlohmann::json& j, const JsonPlace& at) {
  return {at.flag_of(j, "add_prefix_space"), at.flag_of(j, "trim_offsets"),
          at.flag_or(j, "use_regex", true)};
}

}  // namespace draftgate::tokenizer
