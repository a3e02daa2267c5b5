#pragma once
// Opening the files a run reads, with one set of rules for every reader: kernel pseudo-files
// (/proc, /sys, /dev, also through symlinks) are refused, a file must be a regular file, and an
// unreadable file, an empty file and an unreadable directory are told apart in the message.

#include <cstdint>
#include <filesystem>
#include <string>

namespace draftgate::io {

// "/proc", "/sys" or "/dev" when `path` resolves (symlinks followed) into that tree, else "".
std::string pseudo_filesystem_of(const std::filesystem::path& path);

// Throws draftgate::Error naming `path` when it resolves (symlinks followed) into /proc, /sys or
// /dev: those "files" block, never end or change under the reader.
void refuse_pseudo_file(const std::filesystem::path& path);

// The bytes of the regular file `path` (at most `max_bytes`; `kind` names the format in the
// message, e.g. "JSON"). Errors: no such file, not a regular file (and what it is instead),
// cannot read (with the reason), empty, too large.
std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                            const std::string& kind);

// Throws (like read_input_file) unless `path` is a regular file this process can open for reading.
void require_input_file(const std::filesystem::path& path);

// Throws unless `dir` is a directory this process can list.
void require_input_directory(const std::filesystem::path& dir, const std::string& hint = {});

// "a directory", "a FIFO", "a character device", ... for a file-type mode.
std::string file_kind(unsigned mode);

}  // namespace draftgate::io
