#pragma once
// A speculators DFlash checkpoint made from a z-lab one, the way speculators' DFlashConverter
// writes it (convert/dflash/converter.py @c05b95b3 `_build_config` :81-149, `_save` :212-239),
// optionally with a reduced draft vocabulary as speculators training builds one
// (train/vocab_mapping.py :64-96, speculators/model.py `load_verifier_weights` :123-200).

#include <cstdint>
#include <filesystem>
#include <vector>

namespace draftgate::testing {

// Writes `out` (config.json + model.safetensors) from the z-lab drafter `zlab` and its target
// `target`: the body tensors copied as they are, embed_tokens / lm_head from the target
// (lm_head's rows restricted to the kept ids), the config rewritten with taps + 1 (the target's
// final layer dropped, as the converter does) and the z-lab-only keys moved out of
// transformer_layer_config. `kept`: the target ids of a reduced draft vocabulary (any order;
// sorted here, as speculators sorts them), empty for the full vocabulary (no d2t / t2d).
void write_speculators_drafter(const std::filesystem::path& zlab,
                               const std::filesystem::path& target,
                               const std::filesystem::path& out,
                               std::vector<std::int64_t> kept = {});

}  // namespace draftgate::testing
