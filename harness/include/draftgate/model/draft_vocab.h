#pragma once
// A speculators drafter's reduced vocabulary: its lm_head scores draft_vocab_size ids, and
// `d2t` [draft_vocab] holds offsets, target id = draft id + d2t[draft id] (speculators
// train/vocab_mapping.py @c05b95b3 :86-96 builds them from the sorted kept target ids; `t2d`
// [target_vocab] bool marks the kept ones). vLLM loads d2t as draft_id_to_target_id and skips t2d
// (qwen3_dflash.py @036a00d1 DFlashQwen3ForCausalLM.load_weights).

#include <ATen/ATen.h>

#include <cstdint>

#include "draftgate/io/checkpoint.h"

namespace draftgate::model {

// The target id of every draft id, int64 [draft_vocab] on the CPU; undefined when draft_vocab ==
// target_vocab (the identity: a d2t or t2d present must then be all zeros / all true). Throws
// draftgate::Error naming the checkpoint and tensor when d2t or the drafter's own lm_head is
// missing (require_draft_vocab_tensors), when d2t is not an integer tensor
// [draft_vocab], maps an id outside 0..target_vocab-1 or two draft ids to one target id, or when
// t2d is present but not bool [target_vocab] marking exactly the mapped ids.
at::Tensor draft_to_target_ids(const io::Checkpoint& checkpoint, std::int64_t draft_vocab,
                               std::int64_t target_vocab);

// Logits over the draft vocabulary [..., draft_vocab] scattered into the target's [...,
// target_vocab], -inf where no draft id maps: vLLM's compute_logits, so argmax and top-k pick
// target ids. `targets` from draft_to_target_ids, on the logits' device.
at::Tensor scatter_to_target_vocab(const at::Tensor& draft_logits, const at::Tensor& targets,
                                   std::int64_t target_vocab);

}  // namespace draftgate::model
