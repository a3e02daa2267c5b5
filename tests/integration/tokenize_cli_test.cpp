// `draftgate tokenize` as a user runs it: ids and pieces, --json, --text-file read byte for byte,
// --messages rendered by the checkpoint's chat template (--enable-thinking, --chat-template), and
// bad input (exit 2, one line). On a small tokenizer.json written here; the real tokenizers
// are compared with the Hugging Face library in tests/tokenizer/tokenizer_oracle_test.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "chat_checkpoint.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::run_draftgate;
using testing::write_chat_checkpoint;
using testing::write_tokenizer;
namespace fs = std::filesystem;

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
           {"", "give exactly one of --text STRING, --text-file FILE and --messages FILE.json"},
           {"--text a --text-file " + bad.string(), "excludes"}}) {
    const auto r = run_draftgate("tokenize --tokenizer " + dir.string() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.err, HasSubstr(message)) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(TokenizeCli, MessagesAreRenderedByTheCheckpointsTemplateThenTokenized) {
  const fs::path tmp = testing::fresh_dir("tokenize_cli");
  const fs::path dir = write_chat_checkpoint(tmp / "tok");
  const fs::path messages = tmp / "chat.json";
  std::ofstream(messages) << R"([{"role": "u", "content": "h"}])";
  auto r = run_draftgate("tokenize --tokenizer " + dir.string() + " --messages " +
                         messages.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "u: h<|end|>\na:": the template's eos_token comes out as its id (257); the generation prompt
  // is always added.
  EXPECT_EQ(json::parse(r.out),
            json({{"ids", {117, 58, 32, 104, 257, 10, 97, 58}}, {"rendered", "u: h<|end|>\na:"}}));
  r = run_draftgate("tokenize --tokenizer " + dir.string() + " --messages " + messages.string() +
                    " --enable-thinking false --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["rendered"], "u: h<|end|>\na: h");
  const fs::path other = tmp / "other.jinja";
  std::ofstream(other) << "{{ messages[0].content }}{{ messages|length }}";
  r = run_draftgate("tokenize --tokenizer " + dir.string() + " --messages " + messages.string() +
                    " --chat-template " + other.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json({{"ids", {104, 49}}, {"rendered", "h1"}}));
}

TEST(TokenizeCli, TemplateAndMessagesProblemsAreExitTwoWithOneLine) {
  const fs::path tmp = testing::fresh_dir("tokenize_cli");
  const fs::path dir = write_chat_checkpoint(tmp / "tok");
  const fs::path good = tmp / "chat.json";
  std::ofstream(good) << R"([{"role": "u", "content": "h"}])";
  const auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(tmp / name, std::ios::binary) << text;
    return (tmp / name).string();
  };
  const std::string m = " --messages " + good.string();
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {" --messages " + file("obj.json", R"({"role": "u"})"),
            "obj.json: messages must be a JSON array"},
           {" --messages " + file("norole.json", R"([{"content": "x"}])"),
            "norole.json: /0/role: a message needs a string"},
           {" --messages " + file("utf8.json", "[{\"role\": \"u\", \"content\": \"\xff\"}]"),
            "utf8.json: the messages file is not valid UTF-8 at byte 27"},
           {m + " --chat-template " + file("syntax.jinja", "ok\n{% if x %}"),
            "syntax.jinja: line 2: template syntax error"},
           {m + " --chat-template " + file("raw.jinja", "\n\n{% raw %}{% endraw %}"),
            "raw.jinja: line 3: unsupported template construct: the 'raw' statement"},
           {m + " --chat-template " +
                file("raise.jinja", "{{ raise_exception('No user query found in messages.') }}"),
            "raise.jinja: line 1: the template raised an exception: No user query found in "
            "messages."},
           {m + " --enable-thinking maybe", "--enable-thinking"},
           {" --text a --enable-thinking true",
            "--enable-thinking: only a conversation (--messages FILE.json) is rendered"}}) {
    const auto r = run_draftgate("tokenize --tokenizer " + dir.string() + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_THAT(r.err, HasSubstr(message)) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace draftgate
