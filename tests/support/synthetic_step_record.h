#pragma once
// A real training step of a random DFlash drafter on a random Qwen3 target, recorded the way a
// trainer would: the features fed to fc, the teacher logits, the drafter's training-mode block
// logits, the labels, the recipe weights and the logged loss of `loss`.

#include <filesystem>
#include <functional>
#include <string>

#include "draftgate/model/tensor_view.h"
#include "draftgate/train/step_record.h"

namespace draftgate::testing {

// The random f32 models training_step uses: DIR/target and DIR/drafter (taps 0,2 of 4 layers).
const std::filesystem::path& training_step_models();

// The step on MODELS/target and MODELS/drafter (by default training_step_models()).
train::StepRecord training_step(train::LossType loss,
                                const std::filesystem::path& models = training_step_models());

// A batch of three rows written from one recorded sequence of S positions: row 0 the sequence
// right-padded to 2S, row 1 left-padded, row 2 two copies packed end to end (document_ids 7 and 9,
// position_ids restarting); rows 0 and 1 carry N padded anchors, masked out.
struct BatchFile {
  std::filesystem::path path;
  train::StepRecord sequence;
};
BatchFile write_batch(const std::string& name,
                      const std::function<void(io::NamedTensors&)>& edit = {});

}  // namespace draftgate::testing
