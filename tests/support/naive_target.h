#pragma once
// A deliberately naive float64 re-implementation of every target family, written straight from the
// transformers formulas (routed experts one position at a time): full sequence, no cache, explicit
// loops over tokens and heads. The engine is tested against it layer by layer; it shares nothing
// with the engine beyond reading tensors.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "draftgate/io/checkpoint.h"

namespace draftgate::testing {

struct NaiveOutput {
  std::vector<at::Tensor>
      layer_outputs;  // per decoder layer: [T, hidden] float64 (HF hidden_states[l+1])
  at::Tensor logits;  // [T, vocab] float64
};

NaiveOutput naive_forward(const io::Checkpoint& checkpoint,
                          const std::vector<std::int64_t>& tokens);

}  // namespace draftgate::testing
