// Prompt sets of text and messages, end to end: the ids a prompt set renders are `tokenize`'s and
// an input_ids file's; the rendering (tokenizer, template, thinking flag) is recorded in eval
// output, goldens and measured-τ files and min_tau refuses a golden rendered another way; a
// conversation of several user turns is decoded turn by turn, checked against the same turns run
// one by one with the reply decoded by Python. On a random target whose vocabulary holds the small
// byte-level tokenizer of chat_checkpoint.h.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chat_checkpoint.h"
#include "draftgate/io/sha256.h"
#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::run_command;
using testing::run_draftgate;
namespace fs = std::filesystem;

struct Setup {
  fs::path dir, target, drafter;
};

// A target of 300 tokens (the tokenizer's 258 and 42 no token has, as real targets pad their
// vocabulary) with the chat checkpoint's tokenizer.json and template, and a drafter for it.
const Setup& setup() {
  static const Setup s = [] {
    Setup x;
    x.dir = testing::fresh_dir("prompt_sets_cli");
    x.target = x.dir / "target";
    x.drafter = x.dir / "drafter";
    EXPECT_EQ(
        run_draftgate("make-target --family qwen3 --vocab 300 --seed 11 --out " + x.target.string())
            .exit_code,
        0);
    testing::write_chat_checkpoint(x.target);
    EXPECT_EQ(run_draftgate("make-drafter --target " + x.target.string() +
                            " --taps 0,1 --block-size 4 --out " + x.drafter.string())
                  .exit_code,
              0);
    return x;
  }();
  return s;
}

fs::path write(const std::string& name, const std::string& text) {
  return testing::write_file(setup().dir / name, text);
}

json eval_json(const fs::path& prompts, const std::string& flags, const std::string& name) {
  const fs::path out = setup().dir / (name + ".json");
  const auto r =
      run_draftgate("eval --target " + setup().target.string() + " --oracle --prompts " +
                    prompts.string() + " --max-new 10 " + flags + " --json " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(std::ifstream(out));
}

std::vector<std::int64_t> tokenize(const std::string& args) {
  const auto r =
      run_draftgate("tokenize --tokenizer " + setup().target.string() + " " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["ids"].get<std::vector<std::int64_t>>();
}

TEST(PromptSetsCli, RenderedIdsAreTokenizesAndAnInputIdsFilesOfTheSamePrompts) {
  const fs::path chat = write("chat.json", R"([{"role": "user", "content": "h h"}])");
  const std::vector<std::int64_t> messages_ids =
      tokenize("--messages " + chat.string() + " --enable-thinking false");
  const std::vector<std::int64_t> text_ids = tokenize("--text 'a h<|end|>'");
  const fs::path rendered =
      write("rendered.jsonl",
            "{\"id\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"h h\"}]}\n"
            "{\"id\": \"t\", \"text\": \"a h<|end|>\"}\n");
  const fs::path ids =
      write("ids.jsonl", json({{"id", "m"}, {"input_ids", messages_ids}}).dump() + "\n" +
                             json({{"id", "t"}, {"input_ids", text_ids}}).dump() + "\n");
  const json a = eval_json(rendered, "--enable-thinking false", "rendered");
  const json b = eval_json(ids, "", "ids");
  // The same ids decoded: the same identity and the same per-prompt results.
  EXPECT_EQ(a["prompt_set_sha256"], b["prompt_set_sha256"]);
  EXPECT_EQ(a["per_prompt"], b["per_prompt"]);
  EXPECT_TRUE(b["prompt_set_rendering"].is_null());
  EXPECT_EQ(a["prompt_set_rendering"]["enable_thinking"], false);
  std::ifstream tok(setup().target / "tokenizer.json", std::ios::binary);
  EXPECT_EQ(a["prompt_set_rendering"]["tokenizer_sha256"],
            io::sha256_hex(std::string(std::istreambuf_iterator<char>(tok), {})));
  EXPECT_EQ(a["prompt_set_turns"], 2);
  // Thinking on renders other ids (" h" after "a:" only with thinking off), so another identity.
  const json on = eval_json(rendered, "--enable-thinking true", "rendered_on");
  EXPECT_NE(on["prompt_set_sha256"], a["prompt_set_sha256"]);
  EXPECT_EQ(on["prompt_set_rendering"]["enable_thinking"], true);
  EXPECT_EQ(on["prompt_set_rendering"]["template_sha256"],
            a["prompt_set_rendering"]["template_sha256"]);
  // Another template: another template hash.
  const fs::path other = write("other.jinja", "{{ messages[0].content }}");
  const json t = eval_json(rendered, "--chat-template " + other.string(), "other_template");
  EXPECT_NE(t["prompt_set_rendering"]["template_sha256"],
            a["prompt_set_rendering"]["template_sha256"]);
  EXPECT_TRUE(t["prompt_set_rendering"]["enable_thinking"].is_null());
}

TEST(PromptSetsCli, MinTauRefusesAGoldenRenderedAnotherWayAndPassesTheSameRendering) {
  const fs::path prompts =
      write("gold.jsonl",
            "{\"id\": \"m1\", \"messages\": [{\"role\": \"user\", \"content\": \"hh\"}]}\n"
            "{\"id\": \"m2\", \"messages\": [{\"role\": \"system\", \"content\": \"s\"}, "
            "{\"role\": \"user\", \"content\": \"a h\"}]}\n");
  const fs::path golden = setup().dir / "golden.json";
  auto r = run_draftgate("golden record --target " + setup().target.string() + " --drafter " +
                         setup().drafter.string() + " --prompts " + prompts.string() +
                         " --enable-thinking true --max-new 8 --allow-collapsed --force --out " +
                         golden.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json g = json::parse(std::ifstream(golden));
  EXPECT_EQ(g["prompt_set"]["rendering"]["enable_thinking"], true);
  EXPECT_EQ(g["prompt_set"]["turns"], 2);
  // A random drafter's τ is near 1: the collapse tripwire and floor are off so that the same
  // rendering passes on its ratio (1.0).
  const std::string check = "check --only min_tau --target " + setup().target.string() +
                            " --drafter " + setup().drafter.string() + " --golden " +
                            golden.string() +
                            " --param min_tau.collapse_tau=0 --param min_tau.floor=0";
  r = run_draftgate(check + " --enable-thinking false");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("gold.jsonl: rendered with tokenizer "));
  EXPECT_THAT(r.err, HasSubstr("thinking off but the golden " + golden.string() +
                               " was recorded on them rendered with tokenizer "));
  EXPECT_THAT(r.err, HasSubstr("thinking on"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Left out, the template's default is another rendering than the golden's explicit true.
  r = run_draftgate(check);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("thinking the template's default but the golden"));
  // Another template.
  const fs::path other = write("gold_other.jinja", "{{ messages[-1].content }}");
  r = run_draftgate(check + " --enable-thinking true --chat-template " + other.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("rendered with tokenizer"));
  // The same rendering is decoded and judged.
  r = run_draftgate(check + " --enable-thinking true");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(PromptSetsCli, MeasuredTauRecordsTheRendering) {
  const fs::path prompts =
      write("measured.jsonl",
            "{\"id\": \"q\", \"messages\": [{\"role\": \"user\", \"content\": \"h\"}]}\n");
  // One SGLang response (the fuzz seed's first, tied to the prompt by its id).
  std::ifstream seed(fs::path(DRAFTGATE_SOURCE_DIR) /
                     "tests/fuzz/seeds/sglang_requests/four-responses.jsonl");
  std::string line;
  std::getline(seed, line);
  line.replace(line.find("gsm8k-0"), 7, "q");
  const fs::path responses = write("responses.jsonl", line + "\n");
  const fs::path out = setup().dir / "measured.json";
  const auto r =
      run_draftgate("tau import --sglang-requests " + responses.string() +
                    " --num-speculative-tokens 3 --prompts " + prompts.string() + " --tokenizer " +
                    setup().target.string() + " --enable-thinking false --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json m = json::parse(std::ifstream(out));
  EXPECT_EQ(m["prompt_set"]["rendering"]["enable_thinking"], false);
  EXPECT_EQ(m["prompt_set"]["rendering"]["tokenizer_sha256"].get<std::string>().size(), 64u);
}

// Python's bytes.decode("utf-8", "replace") of the reply's ids, as the tokenizer of
// chat_checkpoint.h defines them (id < 256: that byte; 256: " h"; 257 <|end|> is special and 258…
// have no token: both skipped) — the reply text, computed without draftgate's tokenizer.
std::string python_reply(const std::vector<std::int64_t>& ids) {
  std::string list;
  for (auto id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const fs::path script = write("reply.py",
                                "import json, sys\n"
                                "ids = [" +
                                    list +
                                    "]\n"
                                    "b = b''.join(bytes([i]) if i < 256 else b' h' if i == 256 "
                                    "else b'' for i in ids)\n"
                                    "sys.stdout.write(json.dumps(b.decode('utf-8', 'replace')))\n");
  const auto r = run_command("/usr/bin/python3 " + script.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out).get<std::string>();
}

TEST(PromptSetsCli, ConversationsAreDecodedTurnByTurnWithEachGreedyReplyAppended) {
  const json u1 = {{"role", "user"}, {"content", "h"}};
  const json u2 = {{"role", "user"}, {"content", "a h"}};
  const fs::path multi =
      write("multi.jsonl", json({{"id", "mt"}, {"messages", {u1, u2}}}).dump() + "\n");
  const json e = eval_json(multi, "--enable-thinking false", "multi");
  ASSERT_EQ(e["per_prompt"].size(), 2u);
  EXPECT_EQ(e["prompt_set_turns"], 2);
  EXPECT_EQ(e["per_prompt"][0]["turn"], 1);
  EXPECT_EQ(e["per_prompt"][1]["turn"], 2);

  // The same turns one at a time: turn 1 alone, then the conversation with its reply written in.
  const fs::path first =
      write("turn1.jsonl", json({{"id", "mt"}, {"messages", {u1}}}).dump() + "\n");
  const json t1 = eval_json(first, "--enable-thinking false", "turn1");
  const auto reply =
      python_reply(t1["per_prompt"][0]["output_ids"].get<std::vector<std::int64_t>>());
  const json a1 = {{"role", "assistant"}, {"content", reply}};
  const fs::path second =
      write("turn2.jsonl", json({{"id", "mt"}, {"messages", {u1, a1, u2}}}).dump() + "\n");
  const json t2 = eval_json(second, "--enable-thinking false", "turn2");
  json one = t1["per_prompt"][0], two = t2["per_prompt"][0];
  one["turn"] = 1;
  two["turn"] = 2;
  EXPECT_EQ(e["per_prompt"][0], one);
  EXPECT_EQ(e["per_prompt"][1], two);
  // Each turn counts as the benchmark counts it: τ macro is the mean of the turns' τ.
  EXPECT_DOUBLE_EQ(e["tau_macro"].get<double>(),
                   (one["tau"].get<double>() + two["tau"].get<double>()) / 2);
}

TEST(PromptSetsCli, BadPromptsAreExitTwoNamingFileAndLine) {
  const fs::path bad_template = write("raise.jinja", "{{ raise_exception('no') }}");
  const std::string conversation =
      "{\"id\": \"c\", \"messages\": [{\"role\": \"user\", \"content\": \"h\"}]}\n";
  for (const auto& [body, flags, message] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"{\"id\": \"a\", \"text\": \"ok\"}\n{\"id\": \"b\", \"input_ids\": [1], \"text\": "
            "\"x\"}\n",
            "", "bad.jsonl:2: the line gives more than one"},
           {"{\"id\": \"a\", \"text\": \"\xc3(\"}\n", "",
            "bad.jsonl:1: the line is not valid UTF-8"},
           {"{\"id\": \"a\", \"messages\": [{\"role\": \"bot\", \"content\": \"x\"}]}\n", "",
            "bad.jsonl:1: messages/0/role: unknown role \"bot\""},
           {conversation, "--chat-template " + bad_template.string(),
            "raise.jinja: line 1: the template raised an exception: no (rendering "},
           {"{\"id\": \"a\", \"input_ids\": [1]}\n", "--enable-thinking true",
            "--enable-thinking: only \"messages\" prompts are rendered by a chat template"}}) {
    const fs::path p = write("bad.jsonl", body);
    const auto r = run_draftgate("eval --target " + setup().target.string() +
                                 " --oracle --prompts " + p.string() + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << body;
    EXPECT_THAT(r.err, HasSubstr(message)) << body;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace draftgate
