#pragma once
// The target the model-running checks of a run compute with, loaded once per checkpoint and dtype
// and shared: target_logits_noise_free, fc_excludes_target_layer's dynamic half and
// train_infer_consistency ask for the same target at the same precisions. Entries for one
// checkpoint are kept (its files unchanged); asking for another checkpoint drops them.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/model/sequence_target.h"
#include "draftgate/model/target.h"

namespace draftgate::checks {

// The target at `dtype` (with `gdn` on `device`) for one forward over one sequence: in memory when
// it fits the memory budget, streamed a layer at a time otherwise (model/sequence_target.h).
const model::SequenceTarget& sequence_target(
    const io::Checkpoint& checkpoint, at::ScalarType dtype,
    model::GdnAlgorithm gdn = model::GdnAlgorithm::kChunked, at::Device device = at::kCPU);

// The target's embedding and lm_head at `dtype`, for a drafter: the in-memory target when one is
// held at that dtype, otherwise a head-only load (no decoder layers).
const model::TargetModel& target_head(const io::Checkpoint& checkpoint, at::ScalarType dtype);

// Whether the run's checks will ask for bf16 forwards (Engine::plan_record_forwards decides, before
// any check runs). Where they will, a float32 streamed walk computes the bf16 forward beside its
// own: one read of the checkpoint, not two. Where they will not, it computes float32 alone — the
// bf16 arithmetic of a whole forward saved. Until a run says, they are expected.
void expect_bf16_forwards(bool expected);
bool bf16_forwards_expected();

// target.forward(...) with a progress line "check <check>: layer i/N, …" on a terminal.
model::ForwardResult forward_with_progress(const std::string& check,
                                           const model::SequenceTarget& target,
                                           const std::vector<std::int64_t>& tokens,
                                           const std::vector<std::int64_t>& taps,
                                           bool want_logits = true);

}  // namespace draftgate::checks
