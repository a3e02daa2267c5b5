#pragma once
// Greedy (temperature 0) speculative decoding, exactly as the reference loop (z-lab
// `dflash_generate` @10129599): prefill; draft a block from the last committed token; verify it in
// one target forward; accept the longest prefix matching the target's greedy tokens; take the
// bonus token; commit; feed the committed positions' tap features to the drafter. Linear (DFlash)
// or tree (DDTree) drafts. The output equals plain greedy decoding of the target.
//
// Sequence ends, as the reference: a linear block is shortened to the tokens still wanted plus the
// anchor (min(B, remaining + 1) rows, drafted as a block of that size), and a step's acceptance is
// the tokens it committed to the output — accepted drafts + bonus, cut at max_new_tokens and after
// an EOS id. A DDTree step records accepted nodes + 1 (the tree is not shortened).

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/model/dflash.h"
#include "draftgate/model/target.h"
#include "draftgate/tau/decode_config.h"

namespace draftgate::decode {

// What the loop needs from a drafter: per-position logits for the B−1 slots after an anchor.
class BlockDrafter {
 public:
  virtual ~BlockDrafter() = default;
  virtual std::int64_t block_size() const = 0;
  virtual std::vector<std::int64_t> taps() const = 0;  // target layers whose outputs feed it
  virtual void start(const std::vector<std::int64_t>& prompt) = 0;
  // Context for the next committed positions: rows `rows` of a target forward.
  virtual void add_context(const model::ForwardResult& forward,
                           const std::vector<std::int64_t>& rows) = 0;
  // [B−1, vocab] logits for the positions after `anchor` (at the next uncommitted position).
  virtual at::Tensor draft(std::int64_t anchor) = 0;
  // The rows−1 tokens of a linear draft block of `rows` rows (2..B) after `anchor`: the argmax of
  // the drafted logits unless the drafter chooses otherwise (DFlash2's candidate_selector).
  virtual std::vector<std::int64_t> propose(std::int64_t anchor, std::int64_t rows);
  // Why this drafter cannot build a DDTree draft tree, if it cannot.
  virtual std::optional<std::string> tree_refusal() const { return std::nullopt; }
};

// A DFlash drafter with its own cache.
std::unique_ptr<BlockDrafter> dflash_block_drafter(const model::DFlashDrafter& drafter);
// Drafts the target's own greedy continuation (a self-test of the loop: τ = B apart from sequence
// ends).
std::unique_ptr<BlockDrafter> oracle_block_drafter(const model::TargetModel& target,
                                                   std::int64_t block_size, std::int64_t horizon);

struct PromptRun {
  std::string id;
  std::vector<std::int64_t> output;             // generated tokens, ending at EOS or max_new_tokens
  std::vector<std::int64_t> acceptance;         // per verify step: tokens committed (see above)
  std::vector<std::int64_t> accepted_at_depth;  // [d]: steps whose τ exceeds d (d = 1..B−1)
  std::int64_t drafted = 0;                     // draft tokens proposed
  std::vector<std::vector<std::int64_t>> drafts;  // per step, with DecodeConfig::record_drafts
  std::int64_t target_forwards = 0;               // prefill + verify passes
  double seconds = 0;
  double target_seconds = 0;
  double drafter_seconds = 0;
};

PromptRun speculative_generate(const model::TargetModel& target, BlockDrafter& drafter,
                               const std::vector<std::int64_t>& prompt, const DecodeConfig& config);

// Plain greedy decoding with the target's cache; stops after an EOS id (included) or max_new
// tokens.
std::vector<std::int64_t> greedy_generate(const model::TargetModel& target,
                                          const std::vector<std::int64_t>& prompt,
                                          std::int64_t max_new,
                                          const std::vector<std::int64_t>& eos_ids = {});

}  // namespace draftgate::decode
