// `eval --json/--html` decode each prompt's generated ids with the target's tokenizer.json. On the
// trained Qwen3 fixture target (vocabulary 64) beside a tokenizer.json written here whose tokens
// are known: id 0 is the special "<eos>", id i > 0 the character 0x30 + i. The expected text is
// built from that rule, and `draftgate tokenize` of the text must give the ids back.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fixture_paths.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::kTrained;
using ::testing::Not;
using testing::run_draftgate;
namespace fs = std::filesystem;

// A byte-level BPE tokenizer.json without merges: "<eos>" (id 0, a special added token) and the
// ASCII characters 0x31…0x30+(size−1) as ids 1…size−1 (each its own byte-level character).
json small_tokenizer(int size) {
  json vocab = {{"<eos>", 0}};
  for (int id = 1; id < size; ++id) vocab[std::string(1, static_cast<char>(0x30 + id))] = id;
  const json bl = {{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", false},
                   {"use_regex", false}};
  return {{"version", "1.0"},
          {"added_tokens", json::array({{{"id", 0},
                                         {"content", "<eos>"},
                                         {"single_word", false},
                                         {"lstrip", false},
                                         {"rstrip", false},
                                         {"normalized", false},
                                         {"special", true}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer", bl},
          {"post_processor", nullptr},
          {"decoder", bl},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
}

// The rule above, written out: what the ids spell.
std::string spelled(const json& ids) {
  std::string s;
  for (const auto& id : ids)
    s += id.get<int>() == 0 ? std::string("<eos>")
                            : std::string(1, static_cast<char>(0x30 + id.get<int>()));
  return s;
}

// A copy of the fixture target with `tokenizer` (text) as its tokenizer.json, if given.
fs::path target_with(const fs::path& dir, const std::string& tokenizer) {
  const fs::path t = dir / "target";
  fs::copy(kTrained / "qwen3-target", t, fs::copy_options::recursive);
  if (!tokenizer.empty()) testing::write_file(t / "tokenizer.json", tokenizer);
  return t;
}

struct EvalRun {
  testing::CliResult cli;
  json report;
  std::string html;
};

EvalRun eval_on(const fs::path& dir, const fs::path& target) {
  EvalRun r{run_draftgate("eval --oracle --target " + target.string() + " --prompts " +
                          testing::kHeldOutPrompts.string() + " --max-new 12 --eos 0 --json " +
                          (dir / "e.json").string() + " --html " + (dir / "e.html").string()),
            {},
            {}};
  if (r.cli.exit_code == 0) {
    r.report = json::parse(testing::read_file(dir / "e.json"));
    r.html = testing::read_file(dir / "e.html");
  }
  return r;
}

std::string html_escaped(std::string s) {
  std::string o;
  for (char c : s)
    o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

TEST(EvalCliOutputText, EachPromptsTextIsItsIdsDecodedAndTokenizesBackToThem) {
  const fs::path dir = testing::fresh_dir("eval_text_decoded");
  const fs::path target = target_with(dir, small_tokenizer(64).dump());
  const EvalRun run = eval_on(dir, target);
  ASSERT_EQ(run.cli.exit_code, 0) << run.cli.err;
  EXPECT_EQ(run.cli.err.find("note:"), std::string::npos) << run.cli.err;
  EXPECT_EQ(run.report["output_text"], json({{"tokenizer", (target / "tokenizer.json").string()},
                                             {"skip_special_tokens", false}}));
  bool some_eos = false;
  for (const auto& p : run.report["per_prompt"]) {
    const std::string id = p["id"];
    ASSERT_TRUE(p["output_text"].is_string()) << id;
    const std::string text = p["output_text"];
    EXPECT_EQ(text, spelled(p["output_ids"])) << id;
    some_eos |= text.find("<eos>") != std::string::npos;
    // The tokenizer, run on its own, gives the ids back.
    const fs::path file = testing::write_file(dir / (id + ".txt"), text);
    const auto tok = run_draftgate("tokenize --tokenizer " + target.string() + " --text-file " +
                                   file.string() + " --json");
    ASSERT_EQ(tok.exit_code, 0) << tok.err;
    EXPECT_EQ(json::parse(tok.out)["ids"], p["output_ids"]) << id;
    // The HTML shows the text, escaped, under the prompt's id.
    EXPECT_THAT(run.html, HasSubstr("<h3>" + id + "</h3><pre class=\"output\">" +
                                    html_escaped(text) + "</pre>"));
  }
  EXPECT_TRUE(some_eos) << "the special token shows where decoding stopped";
  // The table of prompts keeps the numbers; the texts come after it.
  const auto table = run.html.find("<h2>Per prompt</h2>");
  const auto texts = run.html.find("<h2>Generated text</h2>");
  ASSERT_NE(table, std::string::npos);
  ASSERT_NE(texts, std::string::npos);
  ASSERT_LT(table, texts);
  EXPECT_THAT(run.html.substr(table, texts - table), Not(HasSubstr("output_text")));
}

// A target without tokenizer.json evaluates as before; the output says why there is no text.
TEST(EvalCliOutputText, NoTokenizerJsonIsSaidNotFailed) {
  const fs::path dir = testing::fresh_dir("eval_text_none");
  const fs::path target = target_with(dir, "");
  const EvalRun run = eval_on(dir, target);
  ASSERT_EQ(run.cli.exit_code, 0) << run.cli.err;
  const std::string why = "the target checkpoint " + target.string() + " has no tokenizer.json";
  EXPECT_EQ(run.report["output_text"], json({{"tokenizer", nullptr}, {"unavailable", why}}));
  for (const auto& p : run.report["per_prompt"]) EXPECT_TRUE(p["output_text"].is_null());
  EXPECT_THAT(run.html,
              HasSubstr("<h2>Generated text</h2>\n<p class=\"message\">no text: " + why + "</p>"));
  EXPECT_THAT(run.html, Not(HasSubstr("<pre class=\"output\">")));
}

// A tokenizer.json draftgate does not read: eval goes on, says so once on stderr, and names the
// place in the output.
TEST(EvalCliOutputText, AnUnreadableTokenizerIsANoteAndTheReason) {
  const fs::path dir = testing::fresh_dir("eval_text_unreadable");
  json tok = small_tokenizer(64);
  tok["pre_tokenizer"] = {{"type", "Metaspace"}};
  const fs::path target = target_with(dir, tok.dump());
  const EvalRun run = eval_on(dir, target);
  ASSERT_EQ(run.cli.exit_code, 0) << run.cli.err;
  const std::string place =
      (target / "tokenizer.json").string() +
      ": /pre_tokenizer/type: pre-tokenizer type \"Metaspace\" is not supported";
  EXPECT_THAT(run.cli.err, HasSubstr("note: no output text: draftgate cannot read the target's "
                                     "tokenizer: " +
                                     place));
  EXPECT_THAT(run.report["output_text"]["unavailable"].get<std::string>(), HasSubstr(place));
  EXPECT_TRUE(run.report["output_text"]["tokenizer"].is_null());
}

// A tokenizer smaller than the target's vocabulary: prompts whose output holds an id no token has
// get no text and the reason; the others are decoded.
TEST(EvalCliOutputText, AnIdNoTokenHasLeavesThatPromptWithoutTextAndSaysWhy) {
  const fs::path dir = testing::fresh_dir("eval_text_small_vocab");
  const int size = 40;
  const fs::path target = target_with(dir, small_tokenizer(size).dump());
  const EvalRun run = eval_on(dir, target);
  ASSERT_EQ(run.cli.exit_code, 0) << run.cli.err;
  int decoded = 0, refused = 0;
  for (const auto& p : run.report["per_prompt"]) {
    int outside = -1;
    for (const auto& id : p["output_ids"])
      if (id.get<int>() >= size && outside < 0) outside = id.get<int>();
    if (outside < 0) {
      EXPECT_EQ(p["output_text"], spelled(p["output_ids"]));
      EXPECT_FALSE(p.contains("output_text_unavailable"));
      ++decoded;
    } else {
      EXPECT_TRUE(p["output_text"].is_null());
      EXPECT_THAT(p["output_text_unavailable"].get<std::string>(),
                  HasSubstr("tokenizer.json: no token has id " + std::to_string(outside)));
      EXPECT_THAT(run.html, HasSubstr("no text: " + html_escaped(p["output_text_unavailable"])));
      ++refused;
    }
  }
  EXPECT_GT(decoded, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace draftgate
