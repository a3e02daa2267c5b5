#pragma once
// Atomic file replacement: write a temporary file beside the target, fsync, rename over it.
// A run killed half-way leaves the old file intact.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace draftgate::io {

enum class WriteMode {
  kReplace,    // rename over whatever regular file is there
  kCreateNew,  // link into place; fails, replacing nothing, when `path` exists (O_EXCL-style)
};

// Calls `write` with a stream onto a temporary file in the target's directory, then renames (or
// links) it into `path`. Throws draftgate::Error naming `path` on any I/O failure; the temporary
// file is removed. Callers check their outputs first (io/output_file.h).
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write,
                           WriteMode mode = WriteMode::kReplace);

void write_text_atomically(const std::filesystem::path& path, std::string_view text,
                           WriteMode mode = WriteMode::kReplace);

}  // namespace draftgate::io
