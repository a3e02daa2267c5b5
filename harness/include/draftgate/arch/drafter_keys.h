#pragma once
// Every key a drafter config.json may carry, in one table: implemented (read and applied), inert
// (known not to change the drafter's outputs: boilerplate, training-only, or a value equal to the
// default), or refused (it would change the computation in a way draftgate does not implement).
// A key outside the table is refused too: a config is never evaluated with a key draftgate ignores.
// Torch-free: `probe`, the drafter_config check and the drafter loader share it.

#include <filesystem>
#include <string>
#include <vector>

#include "draftgate/io/config.h"

namespace draftgate::model {

// The formats a drafter directory can be written in.
enum class DrafterFormat {
  kZLab,         // z-lab / SpecForge export: DFlashDraftModel / DFlash2DraftModel + dflash_config
  kSpeculators,  // vllm-project/speculators: speculators_model_type "dflash", DFlashSpeculator
};
const char* drafter_format_name(DrafterFormat format);  // "z-lab" | "speculators"
DrafterFormat detect_drafter_format(const io::ModelConfig& config);

// A key (or file) the reader refuses: where it is, its value, and what it would change.
struct RefusedKey {
  std::string key;           // "dflash_config.projector_type", "mask_embedding.pt"
  std::string value;         // JSON excerpt of the value ("" for a file)
  std::string effect;        // what it would change and why draftgate refuses it
  std::string line() const;  // "dflash_config.projector_type = \"gru\": <effect>"
};

// How each key of the table is treated, for docs and `probe --json`.
enum class KeyStatus { kImplemented, kInert, kRefused };
struct KeyFact {
  std::string key;    // "dflash_config.use_swa"
  std::string value;  // JSON excerpt
  KeyStatus status;
  std::string note;  // what it does / why inert / why refused
};
const char* key_status_name(KeyStatus status);  // "implemented" | "inert" | "refused"

// Every key present in `config` (top level, dflash_config, rope_parameters / rope_scaling) whose
// value draftgate does not implement, in file order; empty for a config evaluated as written.
std::vector<RefusedKey> refused_keys(const io::ModelConfig& config);
// The status of every key present in `config`.
std::vector<KeyFact> key_facts(const io::ModelConfig& config);

// Files beside config.json that engines load into the drafter and draftgate does not
// (MiMo's `mask_embedding.pt`, vLLM `DFlashQwen3Model.mask_embedding`).
std::vector<RefusedKey> refused_files(const std::filesystem::path& drafter_dir);

// Throws draftgate::Error naming `file` and the first refused key or file.
void refuse_unread(const io::ModelConfig& config, const std::filesystem::path* drafter_dir);

}  // namespace draftgate::model
