#pragma once
// What an artifact is, by its content: a target or drafter checkpoint, a step record, a reference
// dump, a golden, a suite, a measured-τ file, a prompt set, or a report draftgate wrote (an output,
// never an input: `eval --json`, `check --report`). Given in another artifact's place, it
// is named for what it is and where it goes, instead of failing the other reader's checks with a
// message about a missing embedding or a schema to re-record. Torch-free; cheap (a checkpoint's
// config.json, a file's first bytes).

#include <filesystem>
#include <string>

namespace draftgate::io {

enum class ArtifactKind {
  kUnknown,
  kTarget,
  kDrafter,
  kStepRecord,
  kReferenceDump,
  kGolden,
  kSuite,
  kMeasuredTau,
  kPromptSet,
  kReport,
  // A serving engine's answers or /metrics (`tau import`): expected, never recognised.
  kEngineOutput,
  // A speculative head draftgate does not run (EAGLE, Medusa): refused in any slot.
  kOtherDrafter
};

struct Recognized {
  ArtifactKind kind = ArtifactKind::kUnknown;
  std::string what;  // "a DFlash drafter checkpoint (config.json architectures DFlashDraftModel)"
};

// Never throws: kUnknown for anything unreadable or unrecognised (its own reader says why).
Recognized recognize_artifact(const std::filesystem::path& path);

// "--drafter", "--step-record", …: the flag an artifact of `kind` goes in ("" for kUnknown and
// kReport).
std::string slot_flag(ArtifactKind kind);

// Throws draftgate::Error naming `path` when its content is another kind of artifact than
// `expected`: "is a DFlash drafter checkpoint (…), not a target checkpoint (--target)" with the
// hint "give it as --drafter". Silent for the expected kind and for anything unrecognised; a
// drafter of another kind (kOtherDrafter) is refused in every slot.
void require_slot(const std::filesystem::path& path, ArtifactKind expected,
                  const std::string& flag);

// recognize_artifact, throwing draftgate::Error naming `path` when it is a drafter of another kind
// (kOtherDrafter) instead of returning it.
Recognized recognize_runnable(const std::filesystem::path& path);

}  // namespace draftgate::io
