#include "draftgate/decode/speculative.h"

#include <algorithm>
#include <chrono>

#include "draftgate/decode/ddtree.h"
#include "draftgate/error.h"
#include "draftgate/model/argmax_rows.h"

namespace draftgate::decode {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The logits [T, vocab] of the last position: the next token is its pick alone (a prompt's other
// rows need no scan).
at::Tensor last_row(const at::Tensor& logits) { return logits.narrow(0, logits.size(0) - 1, 1); }

std::vector<std::int64_t> iota(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v;
  for (auto i = from; i < to; ++i) v.push_back(i);
  return v;
}

class DFlashBlockDrafter : public BlockDrafter {
 public:
  explicit DFlashBlockDrafter(const model::DFlashDrafter& d) : drafter_(d) {}
  std::int64_t block_size() const override { return drafter_.block_size(); }
  std::vector<std::int64_t> taps() const override { return drafter_.config().target_layer_ids; }
  void start(const std::vector<std::int64_t>&) override { state_ = drafter_.new_state(); }
  void add_context(const model::ForwardResult& f, const std::vector<std::int64_t>& rows) override {
    drafter_.add_context(state_, drafter_.features(f, rows));
  }
  at::Tensor draft(std::int64_t anchor) override { return drafter_.draft(state_, anchor); }
  std::vector<std::int64_t> propose(std::int64_t anchor, std::int64_t rows) override {
    return drafter_.propose_tokens(state_, anchor, rows);
  }
  std::optional<std::string> tree_refusal() const override {
    if (!drafter_.is_dflash2()) return std::nullopt;
    return "DDTree is not defined for DFlash2 drafters: the z-lab reference drafts only the "
           "candidate_selector's linear walk (use --tree-budget 0)";
  }

 private:
  const model::DFlashDrafter& drafter_;
  model::DrafterState state_;
};

class OracleBlockDrafter : public BlockDrafter {
 public:
  OracleBlockDrafter(const model::TargetModel& t, std::int64_t b, std::int64_t horizon)
      : target_(t), block_(b), horizon_(horizon) {}
  std::int64_t block_size() const override { return block_; }
  std::vector<std::int64_t> taps() const override { return {}; }
  void start(const std::vector<std::int64_t>& prompt) override {
    sequence_ = prompt;
    const auto greedy = greedy_generate(target_, prompt, horizon_ + block_);
    sequence_.insert(sequence_.end(), greedy.begin(), greedy.end());
    position_ = 0;
  }
  void add_context(const model::ForwardResult&, const std::vector<std::int64_t>& rows) override {
    position_ += static_cast<std::int64_t>(rows.size());
  }
  // One-hot logits of the greedy tokens at positions position_+1 …; past the known continuation,
  // token 0.
  at::Tensor draft(std::int64_t) override {
    at::Tensor logits = at::zeros({block_ - 1, target_.config().vocab}, at::kFloat);
    for (std::int64_t j = 1; j < block_; ++j) {
      const std::int64_t pos = position_ + j;
      logits[j - 1][pos < static_cast<std::int64_t>(sequence_.size()) ? sequence_[pos] : 0] =
          100.0f;
    }
    return logits;
  }

 private:
  const model::TargetModel& target_;
  std::int64_t block_, horizon_;
  std::vector<std::int64_t> sequence_;
  std::int64_t position_ = 0;
};

}  // namespace

std::vector<std::int64_t> BlockDrafter::propose(std::int64_t anchor, std::int64_t rows) {
  return model::argmax_rows(draft(anchor).narrow(0, 0, rows - 1));
}

std::unique_ptr<BlockDrafter> dflash_block_drafter(const model::DFlashDrafter& drafter) {
  return std::make_unique<DFlashBlockDrafter>(drafter);
}

std::unique_ptr<BlockDrafter> oracle_block_drafter(const model::TargetModel& target,
                                                   std::int64_t block_size, std::int64_t horizon) {
  return std::make_unique<OracleBlockDrafter>(target, block_size, horizon);
}

std::vector<std::int64_t> greedy_generate(const model::TargetModel& target,
                                          const std::vector<std::int64_t>& prompt,
                                          std::int64_t max_new,
                                          const std::vector<std::int64_t>& eos_ids) {
  std::vector<std::int64_t> out;
  model::TargetState state = target.new_state();
  std::vector<std::int64_t> next = prompt;
  while (static_cast<std::int64_t>(out.size()) < max_new) {
    const auto r = target.extend(state, next);
    target.commit_all(state);
    out.push_back(model::argmax_rows(last_row(r.logits)).front());
    if (std::find(eos_ids.begin(), eos_ids.end(), out.back()) != eos_ids.end()) break;
    next = {out.back()};
  }
  return out;
}

PromptRun speculative_generate(const model::TargetModel& target, BlockDrafter& drafter,
                               const std::vector<std::int64_t>& prompt,
                               const DecodeConfig& config) {
  if (config.tree_budget > 0)
    if (const auto refusal = drafter.tree_refusal()) throw Error("--tree-budget", *refusal);
  const auto start = Clock::now();
  const std::int64_t b = drafter.block_size();
  const std::vector<std::int64_t> taps = drafter.taps();
  auto is_eos = [&](std::int64_t t) {
    return std::find(config.eos_ids.begin(), config.eos_ids.end(), t) != config.eos_ids.end();
  };
  PromptRun run;
  run.accepted_at_depth.assign(b, 0);
  drafter.start(prompt);

  model::TargetState state = target.new_state();
  auto t = Clock::now();
  const model::ForwardResult prefill = target.extend(state, prompt, {}, taps);
  target.commit_all(state);
  run.target_seconds += since(t);
  run.target_forwards = 1;
  std::int64_t bonus = model::argmax_rows(last_row(prefill.logits)).front();
  run.output.push_back(bonus);
  t = Clock::now();
  drafter.add_context(prefill, iota(0, static_cast<std::int64_t>(prompt.size())));
  run.drafter_seconds += since(t);

  while (static_cast<std::int64_t>(run.output.size()) < config.max_new_tokens &&
         !is_eos(run.output.back())) {
    std::vector<std::int64_t> tokens = {bonus}, parents;  // index 0 = root (the bonus token)
    t = Clock::now();
    if (config.tree_budget > 0) {
      const DraftTree tree =
          build_draft_tree(drafter.draft(bonus), config.tree_budget, config.tree_top_k);
      parents.push_back(-1);
      for (std::size_t i = 0; i < tree.tokens.size(); ++i) {
        tokens.push_back(tree.tokens[i]);
        parents.push_back(tree.parents[i] + 1);
      }
    } else {
      const auto remaining = config.max_new_tokens - static_cast<std::int64_t>(run.output.size());
      const auto drafts = drafter.propose(bonus, std::min(b, remaining + 1));
      tokens.insert(tokens.end(), drafts.begin(), drafts.end());
      for (std::size_t i = 0; i < tokens.size(); ++i)
        parents.push_back(static_cast<std::int64_t>(i) - 1);
    }
    run.drafter_seconds += since(t);
    run.drafted += static_cast<std::int64_t>(tokens.size()) - 1;
    if (config.record_drafts) run.drafts.emplace_back(tokens.begin() + 1, tokens.end());

    t = Clock::now();
    const model::ForwardResult verify = target.extend(
        state, tokens, config.tree_budget > 0 ? parents : std::vector<std::int64_t>{}, taps);
    const auto posterior = model::argmax_rows(verify.logits);
    const auto path = follow_verified_path(tokens, parents, posterior);
    target.commit(state, path);
    run.target_seconds += since(t);
    run.target_forwards += 1;

    const auto accepted = static_cast<std::int64_t>(path.size()) - 1;
    bonus = posterior[path.back()];
    std::vector<std::int64_t> committed;
    for (std::size_t i = 1; i < path.size(); ++i) committed.push_back(tokens[path[i]]);
    committed.push_back(bonus);
    std::int64_t produced = 0;
    for (auto token : committed) {
      if (static_cast<std::int64_t>(run.output.size()) >= config.max_new_tokens ||
          is_eos(run.output.back()))
        break;
      run.output.push_back(token);
      ++produced;
    }
    // This step's τ; depth d counts as accepted when the step committed more than d tokens, so the
    // per-depth counts sum to τ − 1 (as an engine's per-position counters sum to its accepted).
    const std::int64_t tau = config.tree_budget > 0 ? accepted + 1 : produced;
    run.acceptance.push_back(tau);
    for (std::int64_t d = 1; d < tau; ++d) run.accepted_at_depth[d] += 1;
    t = Clock::now();
    drafter.add_context(verify, path);
    run.drafter_seconds += since(t);
  }
  run.seconds = since(start);
  return run;
}

}  // namespace draftgate::decode
