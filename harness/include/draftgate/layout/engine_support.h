#pragma once
// Whether draftgate's engine can run a target, judged from config.json and the tensor names alone
// (torch-free: `probe` and layer_path use it on metadata-only checkpoints). The engine runs the
// families of the table (arch/family_table.h) with dense MLPs, the quantisations and RoPE types
// their entries name (fine-grained FP8: io/fp8_scheme.h), and full (not sliding-window) attention;
// TargetConfig (arch/target_config.h) refuses the rest when loading.

#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"

namespace draftgate::layout {

struct EngineSupport {
  bool supported = true;
  std::vector<std::string> reasons;  // one sentence per thing the engine cannot run
  std::string quantization;          // the weights' quantisation it runs ("FP8 e4m3, ..."); "" none
};

EngineSupport engine_support(const io::Checkpoint& checkpoint, const DecoderStack& stack);

}  // namespace draftgate::layout
