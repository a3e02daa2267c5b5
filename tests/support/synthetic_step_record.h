#pragma once
// A real training step of a random DFlash drafter on a random Qwen3 target, recorded the way a
// trainer would: the features fed to fc, the teacher logits, the drafter's training-mode block
// logits, the labels, the recipe weights and the logged loss of `loss`.

#include <filesystem>

#include "draftgate/train/step_record.h"

namespace draftgate::testing {

// The random f32 models training_step uses: DIR/target and DIR/drafter (taps 0,2 of 4 layers).
const std::filesystem::path& training_step_models();

// The step on MODELS/target and MODELS/drafter (by default training_step_models()).
train::StepRecord training_step(train::LossType loss,
                                const std::filesystem::path& models = training_step_models());

}  // namespace draftgate::testing
