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

// target.forward(...) with a progress line "check <check>: layer i/N, …" on a terminal.
model::ForwardResult forward_with_progress(const std::string& check,
                                           const model::SequenceTarget& target,
                                           const std::vector<std::int64_t>& tokens,
                                           const std::vector<std::int64_t>& taps,
                                           bool want_logits = true);

}  // namespace draftgate::checks
