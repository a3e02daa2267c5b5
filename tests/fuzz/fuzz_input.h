#pragma once
// Shared by the fuzz targets: the input as a file (for readers that take paths), and the rule that
// a draftgate::Error is the expected answer to bad input — anything else escaping is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "draftgate/error.h"

namespace draftgate::fuzz {

// Writes `data` to a per-process file named `name` under the temporary directory and returns its
// path (not /dev/shm: draftgate refuses inputs under /dev).
inline std::filesystem::path as_file(const std::uint8_t* data, std::size_t size,
                                     const std::string& name) {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("draftgate-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::filesystem::path p = dir / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p;
}

// Runs `body`; draftgate::Error (bad input, answered) is swallowed, everything else propagates.
template <class F>
void expect_only_draftgate_errors(F&& body) {
  try {
    body();
  } catch (const draftgate::Error&) {
  }
}

}  // namespace draftgate::fuzz
