// Speculative decoding: greedy equivalence (linear and DDTree, both families), the oracle
// self-test, DDTree construction, τ statistics, prompt sets.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "draftgate/decode/acceptance.h"
#include "draftgate/decode/ddtree.h"
#include "draftgate/decode/speculative.h"
#include "draftgate/io/sha256.h"
#include "draftgate/model/random_checkpoint.h"
#include "draftgate/tau/prompt_renderer.h"
#include "draftgate/tau/prompt_set.h"
#include "error_text.h"
#include "synthetic_layouts.h"
#include "target_families.h"
#include "test_files.h"

namespace draftgate::decode {
namespace {

using ::testing::Each;
using testing::error_of;
using ::testing::HasSubstr;

struct Models {
  io::Checkpoint target_ckpt, drafter_ckpt;
  std::unique_ptr<model::TargetModel> target;
  std::unique_ptr<model::DFlashDrafter> drafter;
};

// A random f32 target of `family` and a random 8-block drafter reading taps {0, 2}; written once
// per process.
Models& models(const testing::FamilyCase& family) {
  static std::map<std::string, std::unique_ptr<Models>> cache;
  auto& slot = cache[family.name];
  if (!slot) {
    const auto dir = testing::fresh_dir("decode_" + family.name);
    model::RandomTargetSpec t;
    t.family = family.family;
    t.layout = family.layout;
    t.dtype = at::kFloat;
    t.seed = 11;
    model::write_random_target(dir / "target", t);
    model::RandomDrafterSpec d;
    d.dtype = at::kFloat;
    d.seed = 12;
    model::write_random_drafter(dir / "drafter", d);
    auto target_ckpt = io::Checkpoint::open(dir / "target");
    auto drafter_ckpt = io::Checkpoint::open(dir / "drafter");
    slot = std::make_unique<Models>(
        Models{std::move(target_ckpt), std::move(drafter_ckpt), nullptr, nullptr});
    slot->target = model::TargetModel::load(slot->target_ckpt, {});
    slot->drafter = model::DFlashDrafter::load(slot->drafter_ckpt, *slot->target);
  }
  return *slot;
}

std::vector<std::int64_t> prompt(std::int64_t n, std::int64_t seed) {
  std::vector<std::int64_t> p;
  for (std::int64_t i = 0; i < n; ++i) p.push_back((seed * 31 + i * 17) % 250);
  return p;
}

class DecodeTest : public ::testing::TestWithParam<testing::FamilyCase> {};

TEST_P(DecodeTest, LinearAndTreeDecodingEqualPlainGreedy) {
  Models& m = models(GetParam());
  const auto drafter = dflash_block_drafter(*m.drafter);
  for (std::int64_t seed : {1, 2, 3}) {
    const auto p = prompt(5 + seed, seed);
    const auto greedy = greedy_generate(*m.target, p, 40);
    for (std::int64_t budget : {0, 3, 12, 40}) {
      DecodeConfig c;
      c.max_new_tokens = 40;
      c.tree_budget = budget;
      const PromptRun run = speculative_generate(*m.target, *drafter, p, c);
      EXPECT_EQ(run.output, greedy) << "seed " << seed << " budget " << budget;
      EXPECT_EQ(run.target_forwards, 1 + static_cast<std::int64_t>(run.acceptance.size()));
      EXPECT_THAT(run.acceptance, Each(::testing::AllOf(::testing::Ge(1), ::testing::Le(8))));
    }
  }
}

TEST_P(DecodeTest, OracleDrafterAcceptsEveryBlock) {
  Models& m = models(GetParam());
  for (std::int64_t budget : {0, 10}) {
    // 49 = the prefill's token + 6 full blocks, so no step is cut at the sequence end.
    const auto oracle = oracle_block_drafter(*m.target, 8, 49);
    DecodeConfig c;
    c.max_new_tokens = 49;
    c.tree_budget = budget;
    const PromptRun run = speculative_generate(*m.target, *oracle, prompt(6, 4), c);
    EXPECT_EQ(run.output, greedy_generate(*m.target, prompt(6, 4), 49));
    EXPECT_THAT(run.acceptance, Each(8)) << "budget " << budget;
    EXPECT_EQ(summarize({run}, 8).tau_macro, 8.0);
  }
}

TEST_P(DecodeTest, SingleChainTreeEqualsLinearLoop) {
  Models& m = models(GetParam());
  const auto drafter = dflash_block_drafter(*m.drafter);
  DecodeConfig linear;
  linear.max_new_tokens = 30;
  DecodeConfig chain = linear;
  chain.tree_budget = 7;  // B − 1 nodes with one candidate per depth: the linear draft
  chain.tree_top_k = 1;
  const PromptRun a = speculative_generate(*m.target, *drafter, prompt(7, 9), linear);
  const PromptRun b = speculative_generate(*m.target, *drafter, prompt(7, 9), chain);
  EXPECT_EQ(a.output, b.output);
  EXPECT_EQ(a.acceptance, b.acceptance);
  // The tree always drafts B − 1 nodes; the linear loop drafts min(B, remaining + 1) − 1 tokens.
  EXPECT_EQ(b.drafted, 7 * static_cast<std::int64_t>(b.acceptance.size()));
  std::int64_t produced = 1, linear_drafted = 0;
  for (auto tau : a.acceptance) {
    linear_drafted += std::min<std::int64_t>(8, linear.max_new_tokens - produced + 1) - 1;
    produced += tau;
  }
  EXPECT_EQ(a.drafted, linear_drafted);
  EXPECT_LT(a.drafted, b.drafted);  // the sequence end shortened at least one block
}

TEST_P(DecodeTest, StopsAtEosAndMaxNew) {
  Models& m = models(GetParam());
  const auto drafter = dflash_block_drafter(*m.drafter);
  const auto greedy = greedy_generate(*m.target, prompt(6, 5), 30);
  DecodeConfig c;
  c.max_new_tokens = 30;
  c.eos_ids = {greedy[9]};
  const PromptRun run = speculative_generate(*m.target, *drafter, prompt(6, 5), c);
  const auto first_eos = std::find(greedy.begin(), greedy.end(), greedy[9]);
  EXPECT_EQ(run.output, std::vector<std::int64_t>(greedy.begin(), first_eos + 1));
  c.eos_ids.clear();
  c.max_new_tokens = 13;
  EXPECT_EQ(speculative_generate(*m.target, *drafter, prompt(6, 5), c).output.size(), 13u);
}

INSTANTIATE_TEST_SUITE_P(Families, DecodeTest, ::testing::ValuesIn(testing::every_family()),
                         [](const auto& p) { return p.param.name; });

TEST(DraftTree, BestFirstWithinBudgetAndDepth) {
  // Depth 1 prefers token 3 then 1; depth 2 prefers token 7.
  at::Tensor logits = at::full({2, 10}, -10.0);
  logits[0][3] = 5.0, logits[0][1] = 4.0, logits[1][7] = 6.0, logits[1][2] = 0.0;
  const DraftTree t = build_draft_tree(logits, 4);
  ASSERT_EQ(t.tokens.size(), 4u);
  EXPECT_EQ(t.tokens[0], 3);
  EXPECT_EQ(t.parents[0], -1);
  EXPECT_EQ(t.tokens[1], 7);  // child of the best root is more likely than the second root
  EXPECT_EQ(t.parents[1], 0);
  for (std::size_t i = 1; i < t.scores.size(); ++i)
    EXPECT_GE(t.scores[i - 1], t.scores[i]) << "best-first order";
  for (std::size_t i = 0; i < t.parents.size(); ++i)
    EXPECT_LT(t.parents[i], static_cast<std::int64_t>(i));
  EXPECT_EQ(build_draft_tree(logits, 500).tokens.size(), 110u)
      << "10 roots + 10 × 10 children: depth 2 caps it";
}

TEST(DraftTree, FollowsTheVerifiedPath) {
  //   0 ─ 1(5) ─ 3(7)
  //     └ 2(6) ─ 4(8)
  const std::vector<std::int64_t> tokens = {0, 5, 6, 7, 8}, parents = {-1, 0, 0, 1, 2};
  EXPECT_EQ(follow_verified_path(tokens, parents, {6, 0, 8, 0, 0}),
            (std::vector<std::int64_t>{0, 2, 4}));
  EXPECT_EQ(follow_verified_path(tokens, parents, {9, 0, 0, 0, 0}), (std::vector<std::int64_t>{0}));
}

TEST(AcceptanceStats, MacroPooledHistogramAndPositions) {
  PromptRun a, b;
  a.acceptance = {4, 2};  // mean 3
  a.accepted_at_depth = {0, 2, 1, 1};
  b.acceptance = {1, 1, 1, 1};  // mean 1
  b.accepted_at_depth = {0, 0, 0, 0};
  a.output.resize(6), b.output.resize(4);
  const AcceptanceStats s = summarize({a, b}, 4);
  EXPECT_DOUBLE_EQ(s.tau_macro, 2.0);
  EXPECT_DOUBLE_EQ(s.tau_pooled, 10.0 / 6.0);
  EXPECT_EQ(s.histogram, (std::vector<std::int64_t>{0, 4, 1, 0, 1}));
  EXPECT_EQ(s.per_position_acceptance, (std::vector<double>{2.0 / 6, 1.0 / 6, 1.0 / 6}));
  EXPECT_EQ(s.accepted, 4);
  EXPECT_EQ(s.generated_tokens, 10);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(io::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(io::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(io::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(PromptSet, ParsesAndHashes) {
  const auto dir = testing::fresh_dir("prompts");
  std::ofstream(dir / "p.jsonl")
      << "{\"id\": \"a\", \"input_ids\": [1, 2, 3], \"task\": \"hi\"}\n\n"
      << "{\"id\": 7, \"input_ids\": [4]}\n";
  const PromptSet s = read_prompt_set(dir / "p.jsonl", "--prompts");
  ASSERT_EQ(s.prompts.size(), 2u);
  EXPECT_EQ(s.prompts[1].id, "7");
  EXPECT_EQ(s.prompts[0].input_ids, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(s.sha256.size(), 64u);
  EXPECT_FALSE(s.rendering);  // token ids as given: no tokenizer read
  EXPECT_EQ(s.turns(), 2u);
}

TEST(PromptSet, IsIdentifiedByItsPromptsNotItsBytes) {
  const auto dir = testing::fresh_dir("prompt_identity_unit");
  const std::string lf =
      "{\"id\": \"a\", \"input_ids\": [1, 2]}\n{\"id\": \"b\", \"input_ids\": [3]}\n";
  const PromptSet a = read_prompt_set(testing::write_file(dir / "lf.jsonl", lf), "--prompts");
  // CRLF, a trailing blank line, other whitespace, key order and a label name the same prompts.
  const PromptSet b =
      read_prompt_set(testing::write_file(dir / "crlf.jsonl",
                                          "{\"input_ids\":[1,2],\"id\":\"a\",\"task\":\"hi\"}\r\n"
                                          "{ \"id\" : \"b\", \"input_ids\" : [ 3 ] }\r\n\r\n"),
                      "--prompts");
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_NE(a.file_sha256, b.file_sha256);
  EXPECT_EQ(a.file_sha256, io::sha256_hex(lf));
  EXPECT_EQ(a.sha256, prompts_sha256(a.prompts));
  // Another token, another id or another order is another prompt set.
  for (const char* other :
       {"{\"id\": \"a\", \"input_ids\": [1, 2]}\n{\"id\": \"b\", \"input_ids\": [4]}\n",
        "{\"id\": \"a\", \"input_ids\": [1, 2]}\n{\"id\": \"c\", \"input_ids\": [3]}\n",
        "{\"id\": \"b\", \"input_ids\": [3]}\n{\"id\": \"a\", \"input_ids\": [1, 2]}\n",
        "{\"id\": \"a\", \"input_ids\": [1]}\n{\"id\": \"b\", \"input_ids\": [2, 3]}\n"})
    EXPECT_NE(read_prompt_set(testing::write_file(dir / "other.jsonl", other), "--prompts").sha256,
              a.sha256)
        << other;
}

TEST(PromptSet, ErrorsSayWhereThePathCameFrom) {
  const auto dir = testing::fresh_dir("prompt_origin");
  EXPECT_THAT(error_of([&] {
                read_prompt_set(dir / "missing.jsonl", "the golden g.json (prompt_set.path)");
              }),
              HasSubstr("missing.jsonl: no such file (the prompt set named by the golden g.json "
                        "(prompt_set.path))"));
  testing::write_file(dir / "bad.jsonl", "{\"id\": \"a\"}\n");
  EXPECT_THAT(error_of([&] { read_prompt_set(dir / "bad.jsonl", "--prompts"); }),
              HasSubstr("(the prompt set named by --prompts)"));
}

TEST(PromptSet, BadLinesNameFileAndLine) {
  const auto dir = testing::fresh_dir("bad_prompts");
  auto check = [&](const std::string& body, const std::string& message) {
    std::ofstream(dir / "p.jsonl") << body;
    EXPECT_THAT(error_of([&] { read_prompt_set(dir / "p.jsonl", "--prompts"); }),
                HasSubstr(message))
        << body;
  };
  check("{\"id\": \"a\", \"input_ids\": [1]}\n{\"id\": \"a\", \"input_ids\": [2]}\n",
        "p.jsonl:2: duplicate id \"a\"");
  check("{\"id\": \"a\", \"input_ids\": []}\n",
        "p.jsonl:1: \"input_ids\" must be a non-empty array");
  check("{\"id\": \"a\", \"input_ids\": [1, -4]}\n", "input_ids holds -4");
  check("{\"input_ids\": [1]}\n", "missing \"id\"");
  check("{\"id\": 1.5, \"input_ids\": [1]}\n", "p.jsonl:1: \"id\" is 1.5, not a string");
  check("{\"id\": null, \"input_ids\": [1]}\n", "p.jsonl:1: \"id\" is null, not a string");
  check("[1, 2]\n", "must be a JSON object");
  check("{\"id\": \"a\", \"input_ids\": [1]\n", "invalid JSON");
  check("\n\n", "prompt set is empty");
  // Exactly one input per line; text and messages are checked before any tokenizer is read.
  check("{\"id\": \"a\"}\n", "p.jsonl:1: the line gives no prompt");
  check("{\"id\": \"a\", \"input_ids\": [1], \"text\": \"hi\"}\n",
        "p.jsonl:1: the line gives more than one of \"input_ids\", \"text\" and \"messages\"");
  check("{\"id\": \"a\", \"text\": \"hi\", \"messages\": []}\n", "p.jsonl:1: the line gives more");
  check("{\"id\": \"a\", \"text\": 3}\n", "p.jsonl:1: \"text\" must be a string");
  check("{\"id\": \"a\", \"text\": \"\"}\n", "p.jsonl:1: \"text\" is empty");
  check("{\"id\": \"a\", \"messages\": \"hi\"}\n", "messages must be a JSON array");
  check("{\"id\": \"a\", \"messages\": []}\n", "p.jsonl:1: \"messages\" is empty");
  check("{\"id\": \"a\", \"messages\": [{\"role\": \"usr\", \"content\": \"x\"}]}\n",
        "p.jsonl:1: messages/0/role: unknown role \"usr\"");
  check(
      "{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}, "
      "{\"role\": \"assistant\", \"content\": \"y\"}]}\n",
      "p.jsonl:1: the conversation ends with an assistant message");
  check("{\"id\": \"a\", \"text\": \"\xff\"}\n",
        "p.jsonl:1: the line is not valid UTF-8 at byte 22");
}

TEST(PromptSet, ConversationsSplitIntoTurnsAtConsecutiveUserMessages) {
  using nlohmann::ordered_json;
  const auto msg = [](const char* role, const char* content) {
    return ordered_json{{"role", role}, {"content", content}};
  };
  // mt-bench: user, user → two turns; a given assistant reply is history, not a turn.
  const ordered_json conversation =
      ordered_json::array({msg("system", "s"), msg("user", "u1"), msg("user", "u2"),
                           msg("assistant", "a2"), msg("user", "u3")});
  const auto turns = split_turns(conversation);
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[0], ordered_json::array({msg("system", "s"), msg("user", "u1")}));
  EXPECT_EQ(turns[1],
            ordered_json::array({msg("user", "u2"), msg("assistant", "a2"), msg("user", "u3")}));
  Prompt p;
  p.messages = turns[0];
  p.later_turns = {turns[1]};
  EXPECT_EQ(conversation_at(p, {"r1"}),
            ordered_json::array({msg("system", "s"), msg("user", "u1"), msg("assistant", "r1"),
                                 msg("user", "u2"), msg("assistant", "a2"), msg("user", "u3")}));
  EXPECT_EQ(conversation_at(p, {}), turns[0]);
}

TEST(PromptSet, RenderingFlagsWithoutMessagesAreRefusedNotIgnored) {
  const auto dir = testing::fresh_dir("prompt_flags");
  testing::write_file(dir / "p.jsonl", "{\"id\": \"a\", \"input_ids\": [1]}\n");
  PromptOptions o;
  o.enable_thinking = false;
  EXPECT_THAT(error_of([&] { read_prompt_set(dir / "p.jsonl", "--prompts", o); }),
              HasSubstr("--enable-thinking: only \"messages\" prompts are rendered by a chat "
                        "template"));
}

TEST(PromptSet, RenderingRoundTripsThroughJson) {
  PromptRendering r{std::string(64, 'a'), std::string(64, 'b'), false};
  EXPECT_EQ(rendering_from_json(rendering_json(r), "f", "x"), r);
  PromptRendering text_only{std::string(64, 'c'), std::nullopt, std::nullopt};
  EXPECT_EQ(rendering_from_json(rendering_json(text_only), "f", "x"), text_only);
  EXPECT_FALSE(rendering_from_json(rendering_json(std::nullopt), "f", "x"));
  EXPECT_EQ(describe_rendering(r), "tokenizer aaaaaaaaaaaa…, template bbbbbbbbbbbb…, thinking off");
  EXPECT_EQ(describe_rendering(std::nullopt), "token ids as given");
  EXPECT_THAT(error_of([&] {
                rendering_from_json({{"tokenizer_sha256", "x"}}, "g.json", "r");
              }),
              HasSubstr("g.json: r must be null or an object"));
}

}  // namespace
}  // namespace draftgate::decode
