#pragma once
// How far a typo is from the name it meant: "did you mean --golden?" for a mistyped flag, and a
// step record's misspelt metadata key, which would otherwise fall back to its default.

#include <string>

namespace draftgate {

// Levenshtein distance (insertions, deletions, substitutions) between two byte strings.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace draftgate
