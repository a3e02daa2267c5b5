// `draftgate tokenize` as a user runs it: ids and pieces, --json, --text-file read byte for byte,
// and bad input (exit 2, one line). On a small tokenizer.json written here; the real tokenizers
// are compared with the Hugging Face library in tests/tokenizer/tokenizer_oracle_test.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

// A byte-level tokenizer: the 256 byte characters (id = byte), "Ġh" = 256, <|end|> = 257.
fs::path write_tokenizer(const fs::path& dir) {
  json vocab = json::object();
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
  const json bl = {{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", false},
                   {"use_regex", false}};
  const json j = {
      {"version", "1.0"},
      {"added_tokens", json::array({{{"id", 257},
                                     {"content", "<|end|>"},
                                     {"single_word", false},
                                     {"lstrip", false},
                                     {"rstrip", false},
                                     {"normalized", false},
                                     {"special", true}}})},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", json::array({{{"type", "Split"},
                                        {"pattern", {{"Regex", R"(\s+|\S+)"}}},
                                        {"behavior", "Isolated"},
                                        {"invert", false}},
                                       bl})}}},
      {"post_processor", bl},
      {"decoder", bl},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({{"Ġ", "h"}})}}}};
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  return dir;
}

TEST(TokenizeCli, PrintsIdsAndPieces) {
  const fs::path tmp = testing::fresh_dir("tokenize_cli");
  const fs::path dir = write_tokenizer(tmp / "tok");
  const auto r = run_draftgate("tokenize --tokenizer " + dir.string() + " --text 'a h<|end|>'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ids        97 32 104 257\n"));
  EXPECT_THAT(r.out, HasSubstr("  257\t\"<|end|>\"\n"));
  EXPECT_THAT(r.out, HasSubstr("  32\t\" \"\n"));
}

TEST(TokenizeCli, JsonHasIdsAndTheRenderedText) {
  const fs::path tmp = testing::fresh_dir("tokenize_cli");
  const fs::path dir = write_tokenizer(tmp / "tok");
  const auto r = run_draftgate("tokenize --tokenizer " + (dir / "tokenizer.json").string() +
                               " --text ' h' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  // The Split pre-tokenizer isolates the space, so the merge Ġ h never applies (as in the HF
  // library).
  EXPECT_EQ(j, json({{"ids", {32, 104}}, {"rendered", " h"}}));
}

TEST(TokenizeCli, TextFileIsReadByteForByte) {
  const fs::path tmp = testing::fresh_dir("tokenize_cli");
  const fs::path dir = write_tokenizer(tmp / "tok");
  const fs::path text = tmp / "prompt.txt";
  std::ofstream(text, std::ios::binary) << "h\r\n\n";
  auto r = run_draftgate("tokenize --tokenizer " + dir.string() + " --text-file " + text.string() +
                         " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["ids"], json({104, 13, 10, 10}));
  EXPECT_EQ(json::parse(r.out)["rendered"], "h\r\n\n");
  std::ofstream(text, std::ios::binary | std::ios::trunc).flush();
  r = run_draftgate("tokenize --tokenizer " + dir.string() + " --text-file " + text.string() +
                    " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json({{"ids", json::array()}, {"rendered", ""}}));
}

TEST(TokenizeCli, BadInputIsExitTwoWithOneLine) {
  const fs::path tmp = testing::fresh_dir("tokenize_cli");
  const fs::path dir = write_tokenizer(tmp / "tok");
  const fs::path bad = tmp / "bad.txt";
  std::ofstream(bad, std::ios::binary) << "ok\xC3(";
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--text-file " + bad.string(), bad.string() + ": text is not valid UTF-8 at byte 2"},
           {"", "give exactly one of --text STRING and --text-file FILE"},
           {"--text a --text-file " + bad.string(), "excludes"}}) {
    const auto r = run_draftgate("tokenize --tokenizer " + dir.string() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.err, HasSubstr(message)) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace draftgate
