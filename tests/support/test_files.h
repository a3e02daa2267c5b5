#pragma once
// Scratch directories and whole-file reads for the tests.

#include <filesystem>
#include <string>

namespace draftgate::testing {

// A fresh empty directory under the test temp dir.
std::filesystem::path fresh_dir(const std::string& name);

// A file's bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);
// Writes `text` as the whole file; returns `path`.
std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace draftgate::testing
