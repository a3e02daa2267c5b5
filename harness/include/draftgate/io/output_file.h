#pragma once
// The output policy every verb that writes applies before any work starts:
// - an output must not be, or resolve to (symlinks, hard links), a file the run reads, nor lie
//   inside a checkpoint directory the run reads;
// - an existing output must be a regular file (a directory for directory outputs): a device node,
//   FIFO or socket is never replaced by the atomic rename;
// - nothing is written under /proc, /sys or /dev;
// - the output's folder must exist (nothing creates folders; a directory output's own directory is
//   created, its parent is not);
// - two outputs of one run must be different files.
// Goldens are then created without replacing anything (io::WriteMode::kCreateNew), so of two
// concurrent records to a new path exactly one succeeds.

#include <filesystem>
#include <string>
#include <vector>

namespace draftgate::io {

struct RunPath {
  std::filesystem::path path;
  std::string flag;  // what named it, for the message: "--target", "the golden's prompt set"
  bool directory = false;
};

// Throws draftgate::Error naming the output's flag and path when `outputs` break the policy
// against `inputs`. Empty paths (an output not asked for, an input not given) are ignored.
void check_outputs(const std::vector<RunPath>& outputs, const std::vector<RunPath>& inputs);

}  // namespace draftgate::io
