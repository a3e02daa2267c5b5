#pragma once
// Where the tests find the source tree and its fixtures: one definition for every test file.

#include <filesystem>

namespace draftgate::testing {

inline const std::filesystem::path kSourceDir = DRAFTGATE_SOURCE_DIR;
// The tiny trained targets, drafters, step records and prompts (fixtures/README.md).
inline const std::filesystem::path kTrained = kSourceDir / "fixtures/trained";
// config.json / index files of public checkpoints, metadata only.
inline const std::filesystem::path kRealLayouts = kSourceDir / "fixtures/real-layouts";
inline const std::filesystem::path kHeldOutPrompts = kTrained / "prompts/held-out.jsonl";

}  // namespace draftgate::testing
