#pragma once
// Atomic file replacement: write a temporary file beside the target, fsync, rename over it.
// A run killed half-way leaves the old file intact.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace draftgate::io {

// Calls `write` with a stream onto a temporary file in the target's directory, then renames it over
// `path`. Throws draftgate::Error naming `path` on any I/O failure; the temporary file is removed.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);

void write_text_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace draftgate::io
