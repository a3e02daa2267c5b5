#include "chat_checkpoint.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace draftgate::testing {
namespace fs = std::filesystem;

fs::path write_tokenizer(const fs::path& dir) {
  nlohmann::json vocab = nlohmann::json::object();
  const auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const int c = printable(b) ? b : next++;
    std::string s;
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else {
      s += static_cast<char>(0xC0 | (c >> 6));
      s += static_cast<char>(0x80 | (c & 0x3F));
    }
    vocab[s] = b;
  }
  vocab["Ġh"] = 256;
  const nlohmann::json bl = {{"type", "ByteLevel"},
                             {"add_prefix_space", false},
                             {"trim_offsets", false},
                             {"use_regex", false}};
  const nlohmann::json j = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array({{{"id", 257},
                                               {"content", "<|end|>"},
                                               {"single_word", false},
                                               {"lstrip", false},
                                               {"rstrip", false},
                                               {"normalized", false},
                                               {"special", true}}})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", nlohmann::json::array({{{"type", "Split"},
                                                  {"pattern", {{"Regex", R"(\s+|\S+)"}}},
                                                  {"behavior", "Isolated"},
                                                  {"invert", false}},
                                                 bl})}}},
      {"post_processor", bl},
      {"decoder", bl},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array({{"Ġ", "h"}})}}}};
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  return dir;
}

fs::path write_chat_checkpoint(const fs::path& dir) {
  write_tokenizer(dir);
  const nlohmann::json config = {
      {"eos_token", "<|end|>"},
      {"chat_template",
       "{%- for m in messages %}{{ m.role }}: {{ m.content }}{{ eos_token }}\n{% endfor %}"
       "{%- if add_generation_prompt %}a:{% if enable_thinking is defined and enable_thinking is "
       "false %}"
       " h{% endif %}{% endif %}"}};
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  return dir;
}

}  // namespace draftgate::testing
