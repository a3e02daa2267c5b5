// `draftgate prompts build`: the z-lab benchmark's prompts (z-lab/dflash dflash/benchmark.py,
// commit 44947fb) from small dataset exports written here, each compared with the prompt written
// out by hand from benchmark.py's format strings; bad rows and flags are in the hostile-input
// catalogue.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_cli.h"
#include "test_files.h"

namespace draftgate {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::run_draftgate;
namespace fs = std::filesystem;

struct Built {
  int exit_code;
  std::string out, err;
  std::vector<std::string> lines;  // of the prompt set written
};

Built build(const std::string& dataset, const std::string& rows, const std::string& flags = "") {
  const fs::path dir = testing::fresh_dir("prompts_build_" + dataset);
  testing::write_file(dir / "export.jsonl", rows);
  const auto r = run_draftgate("prompts build --dataset " + dataset + " --from " +
                               (dir / "export.jsonl").string() + " --out " +
                               (dir / "prompts.jsonl").string() + flags);
  Built b{r.exit_code, r.out, r.err, {}};
  std::istringstream in(testing::read_file(dir / "prompts.jsonl"));
  for (std::string line; std::getline(in, line);) b.lines.push_back(line);
  return b;
}

// The prompt-set line benchmark.py's turns become: one user message per turn, in order.
json line_of(const std::string& id, const std::vector<std::string>& turns) {
  json messages = json::array();
  for (const auto& t : turns) messages.push_back({{"role", "user"}, {"content", t}});
  return {{"id", id}, {"messages", messages}};
}

void expect_lines(const Built& b, const std::vector<json>& expected) {
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ASSERT_EQ(b.lines.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(json::parse(b.lines[i]), expected[i]) << b.lines[i];
    EXPECT_EQ(b.lines[i].rfind("{\"id\":", 0), 0u) << "the id comes first: " << b.lines[i];
  }
}

const std::string kReason =
    "\nPlease reason step by step, and put your final answer within \\boxed{}.";

TEST(PromptsBuild, Gsm8kAppendsTheStepByStepInstructionToTheQuestion) {
  // Rows as openai/gsm8k (main, test) exports them; braces and non-ASCII kept as written
  // (str.format does not read the value's braces); \u escapes as pandas' to_json writes them.
  const auto b = build("gsm8k",
                       "{\"question\": \"Janet has {3} ducks.\", \"answer\": \"#### 3\"}\n"
                       "{\"question\": \"Caf\\u00e9 costs 2\\u20ac?\", \"answer\": \"#### 2\"}\n");
  expect_lines(
      b, {line_of("gsm8k-0", {"Janet has {3} ducks.\nPlease reason step by step, and put your "
                              "final answer within \\boxed{}."}),
          line_of("gsm8k-1", {"Caf\xC3\xA9 costs 2\xE2\x82\xAC?" + kReason})});
  EXPECT_THAT(b.out, HasSubstr(": 2 gsm8k prompts (2 user turns) from "));
}

TEST(PromptsBuild, Math500ReadsTheProblem) {
  const auto b = build("math500",
                       "{\"problem\": \"Find $x$ if $x^2=4$.\", \"solution\": \"x=2\", \"answer\": "
                       "\"2\", \"subject\": \"Algebra\", \"level\": 1, \"unique_id\": "
                       "\"test/algebra/1.json\"}\n");
  expect_lines(b, {line_of("math500-0", {"Find $x$ if $x^2=4$." + kReason})});
}

TEST(PromptsBuild, HumanevalWrapsThePromptInAPythonBlock) {
  const auto b =
      build("humaneval",
            "{\"task_id\": \"HumanEval/0\", \"prompt\": \"def add(a, b):\\n    "
            "\\\"\\\"\\\"Sum.\\\"\\\"\\\"\\n\", \"canonical_solution\": \"    return a + "
            "b\\n\", \"test\": \"\", \"entry_point\": \"add\"}\n");
  expect_lines(b, {line_of("humaneval-0",
                           {"Write a solution to the following problem and make sure that it "
                            "passes the tests:\n```python\ndef add(a, b):\n    \"\"\"Sum.\"\"\"\n"
                            "\n```"})});
}

TEST(PromptsBuild, MbppUsesTheSanitizedPromptAsIs) {
  const auto b = build(
      "mbpp",
      "{\"source_file\": \"x.jsonl\", \"task_id\": 2, \"prompt\": \"Write a function to find "
      "the shared elements from the given two lists.\", \"code\": \"\", \"test_imports\": [], "
      "\"test_list\": [\"assert 1\"]}\n");
  expect_lines(b, {line_of("mbpp-0", {"Write a function to find the shared elements from the "
                                      "given two lists."})});
}

TEST(PromptsBuild, MtBenchKeepsEveryTurnInOrder) {
  const auto b = build("mt-bench",
                       "{\"prompt\": [\"Compose a travel blog post.\", \"Rewrite it with A.\"], "
                       "\"prompt_id\": 81, \"category\": \"writing\", \"reference\": []}\n"
                       "{\"prompt\": [\"Only one turn\"], \"prompt_id\": 82, \"category\": "
                       "\"math\", \"reference\": [\"4\"]}\n");
  expect_lines(b, {line_of("mt-bench-0", {"Compose a travel blog post.", "Rewrite it with A."}),
                   line_of("mt-bench-1", {"Only one turn"})});
  EXPECT_THAT(b.out, HasSubstr(": 2 mt-bench prompts (3 user turns) from "));
}

// --limit takes the first N rows of the export; blank
// lines are not rows, so the ids keep the dataset's row index.
TEST(PromptsBuild, LimitTakesTheFirstRowsAndIdsCountRows) {
  const std::string rows =
      "{\"question\": \"a\"}\n\n{\"question\": \"b\"}\r\n{\"question\": \"c\"}\n";
  expect_lines(build("gsm8k", rows, " --limit 2"),
               {line_of("gsm8k-0", {"a" + kReason}), line_of("gsm8k-1", {"b" + kReason})});
  expect_lines(build("gsm8k", rows, " --limit 9"),
               {line_of("gsm8k-0", {"a" + kReason}), line_of("gsm8k-1", {"b" + kReason}),
                line_of("gsm8k-2", {"c" + kReason})});
  // Rows past the limit are not read: a bad row there does not stop the build.
  expect_lines(build("gsm8k", "{\"question\": \"a\"}\nnot json\n", " --limit 1"),
               {line_of("gsm8k-0", {"a" + kReason})});
}

// CPython itself (Debian's /usr/bin/python3) picks the rows: benchmark.py's _limit_dataset is
// random.shuffle of the whole dataset after random.seed(S), then the first N.
std::vector<int> python_pick(int rows, int n, const std::string& seed) {
  const fs::path dir = testing::fresh_dir("prompts_build_python");
  const fs::path script = testing::write_file(
      dir / "pick.py",
      "import json, random\nrandom.seed(" + seed + ")\nrows = list(range(" + std::to_string(rows) +
          "))\nrandom.shuffle(rows)\nprint(json.dumps(rows[:" + std::to_string(n) + "]))\n");
  const std::string command =
      "/usr/bin/python3 " + script.string() + " > " + (dir / "out.json").string();
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return json::parse(testing::read_file(dir / "out.json")).get<std::vector<int>>();
}

TEST(PromptsBuild, ShuffleSeedPicksTheRowsBenchmarkMaxSamplesPicks) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs Debian's python3 as the oracle";
  std::string rows;
  const int count = 300;  // past 256, so randbelow also rejects draws of 9 bits
  for (int i = 0; i < count; ++i) rows += "{\"question\": \"q" + std::to_string(i) + "\"}\n";
  for (const std::string seed : {"0", "42", "7", "4294967296", "1099511627781"}) {
    for (const int n : {1, 7, 128, 299}) {
      const auto b =
          build("gsm8k", rows, " --limit " + std::to_string(n) + " --shuffle-seed " + seed);
      std::vector<json> expected;
      for (const int row : python_pick(count, n, seed))
        expected.push_back(
            line_of("gsm8k-" + std::to_string(row), {"q" + std::to_string(row) + kReason}));
      expect_lines(b, expected);
    }
  }
  // No more rows than --limit: the benchmark does not shuffle, nor does draftgate.
  expect_lines(build("gsm8k", "{\"question\": \"a\"}\n{\"question\": \"b\"}\n",
                     " --limit 2 --shuffle-seed 0"),
               {line_of("gsm8k-0", {"a" + kReason}), line_of("gsm8k-1", {"b" + kReason})});
}

// benchmark.py's _run_server: rows 0 … N+C−1 wrapping around (dataset[i % len]), turns[0] only,
// the first max(C, 1) sent as warmup and the rest measured (an outside tester's case: --limit N
// gave the warmup rows instead).
TEST(PromptsBuild, ServerBackendTakesTheRowsTheServerBenchmarkMeasures) {
  const std::string rows =
      "{\"prompt\": [\"a1\", \"a2\"]}\n{\"prompt\": [\"b1\", \"b2\"]}\n{\"prompt\": [\"c1\"]}\n";
  // As the benchmark computes it, by hand: N 4, C 2 over 3 rows → rows 0 1 2 0 1 2, less 2.
  expect_lines(build("mt-bench", rows, " --server-backend 4,2"),
               {line_of("mt-bench-2", {"c1"}), line_of("mt-bench-0-again-1", {"a1"}),
                line_of("mt-bench-1-again-1", {"b1"}), line_of("mt-bench-2-again-1", {"c1"})});
  // Concurrency 0 still warms up with one request (bs = max(C, 1)).
  expect_lines(build("mt-bench", rows, " --server-backend 1,0"), {line_of("mt-bench-1", {"b1"})});
  const auto both = build("mt-bench", rows, " --server-backend 1,0 --limit 2");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("--limit excludes --server-backend"));
  const auto none = build("mt-bench", rows, " --server-backend 0,4");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--server-backend: N (--num-prompts) must be at least 1"));
}

TEST(PromptsBuild, TheHelpPageShowsAnExample) {
  const auto r = run_draftgate("prompts build --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Example:\n  draftgate prompts build --dataset gsm8k"));
}

}  // namespace
}  // namespace draftgate
