#include "draftgate/tokenizer/decoder.h"

#include "draftgate/tokenizer/byte_level.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

class ByteLevel : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      // A token with a character outside the alphabet contributes its own UTF-8 bytes.
      std::string mapped;
      bool all = true;
      for (std::size_t pos = 0; pos < t.size();) {
        std::size_t len = 0;
        const int b = alphabet_byte(decode_utf8(t, pos, &len));
        pos += len;
        if (b < 0) {
          all = false;
          break;
        }
        mapped += static_cast<char>(b);
      }
      bytes += all ? mapped : t;
    }
    return {utf8_lossy(bytes)};
  }
};

// byte_fallback.rs: runs of <0xNN> tokens become their bytes when those form valid UTF-8, else
// one U+FFFD per byte.
class ByteFallback : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    std::size_t pending_count = 0;
    const auto flush = [&] {
      if (pending_count == 0) return;
      if (invalid_utf8_at(pending) == std::string::npos) {
        out.push_back(pending);
      } else {
        for (std::size_t i = 0; i < pending_count; ++i) out.push_back("\xEF\xBF\xBD");
      }
      pending.clear();
      pending_count = 0;
    };
    for (std::string& t : tokens) {
      const int b = byte_of(t);
      if (b >= 0) {
        pending += static_cast<char>(b);
        ++pending_count;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    return out;
  }

 private:
  // Rust's u8::from_str_radix(&token[3..5], 16): two hex digits of either case, or '+' and one.
  static int byte_of(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    const auto digit = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int hi = digit(t[3]), lo = digit(t[4]);
    if (t[3] == '+') return lo;
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& step : steps_) tokens = step->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> decoder_from_json(const nlohmann::json& j, const JsonPlace& at) {
  if (j.is_null()) return nullptr;
  const std::string type = at.type_of(j);
  if (type == "ByteLevel") {
    byte_level_flags(j, at);  // they change offsets, not the text, but the library requires them
    return std::make_unique<ByteLevel>();
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Sequence") {
    const auto& list = at.require(j, "decoders");
    if (!list.is_array()) at.at("decoders").fail("must be an array");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto step = decoder_from_json(list[i], at.at("decoders").at(i));
      if (step == nullptr) at.at("decoders").at(i).fail("must be a decoder, got null");
      steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  at.at("type").fail("decoder type \"" + type + "\" is not supported",
                     "draftgate reads ByteLevel, ByteFallback, Fuse and Sequence");
}

}  // namespace draftgate::tokenizer
