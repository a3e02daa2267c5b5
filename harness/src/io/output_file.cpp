#include "draftgate/io/output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"

namespace draftgate::io {
namespace fs = std::filesystem;

namespace {

// The path with every existing symlink resolved (the missing tail kept as written).
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : r;
}

bool inside(const fs::path& path, const fs::path& dir) {
  const auto rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

// Whether a file directly inside `dir` is the file `st` describes (a hard link elsewhere).
bool holds_inode(const fs::path& dir, const struct stat& st) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    struct stat entry_st {};
    if (::stat(entry.path().c_str(), &entry_st) == 0 && entry_st.st_dev == st.st_dev &&
        entry_st.st_ino == st.st_ino)
      return true;
  }
  return false;
}

// One rule for every output: its folder must exist. Nothing creates folders, so a mistyped
// folder is one line before any work instead of a failed write after it (or a stray tree).
void require_parent_folder(const RunPath& out) {
  const fs::path folder = out.path.has_parent_path() ? out.path.parent_path() : fs::path(".");
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT && err != ENOTDIR)  // a folder above it is unreadable
      throw Error(out.flag + " " + out.path.string(),
                  "cannot reach the folder " + folder.string() + ": " + std::strerror(err),
                  "write the output somewhere else");
    throw Error(
        out.flag + " " + out.path.string(), "the folder " + folder.string() + " does not exist",
        "create it first (mkdir -p " + folder.string() + "), or write the output somewhere else");
  }
  if (!S_ISDIR(st.st_mode))
    throw Error(out.flag + " " + out.path.string(),
                folder.string() + " is " + file_kind(st.st_mode) + ", not a folder",
                "write the output somewhere else");
}

void check_one(const RunPath& out, const std::vector<RunPath>& inputs) {
  const std::string name = out.path.string();
  auto refuse = [&](const std::string& why) {
    throw Error(out.flag + " " + name, why, "write the output somewhere else");
  };
  if (const std::string root = pseudo_filesystem_of(out.path); !root.empty())
    refuse("resolves into " + root + "; draftgate writes only regular files");
  require_parent_folder(out);
  struct stat st {};
  const bool exists = ::stat(out.path.c_str(), &st) == 0;
  struct stat link {};
  if (!exists && ::lstat(out.path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
    refuse(
        "is a symbolic link that leads to no file (dangling, or a loop); only a regular file is "
        "ever replaced");
  if (exists && out.directory && !S_ISDIR(st.st_mode))
    refuse("exists and is " + file_kind(st.st_mode) + ", not a directory");
  if (exists && !out.directory && !S_ISREG(st.st_mode))
    refuse("exists and is " + file_kind(st.st_mode) + "; only a regular file is ever replaced");
  const fs::path real = resolved(out.path);
  for (const RunPath& in : inputs) {
    if (in.path.empty()) continue;
    const fs::path in_real = resolved(in.path);
    struct stat in_st {};
    const bool same_inode = exists && ::stat(in.path.c_str(), &in_st) == 0 &&
                            in_st.st_dev == st.st_dev && in_st.st_ino == st.st_ino;
    if (same_inode || real == in_real)
      refuse("is " + std::string(in.directory ? "the input directory " : "the input file ") +
             in.path.string() + " (" + in.flag + "); draftgate never writes over an input");
    if (in.directory && inside(real, in_real))
      refuse("lies inside the input checkpoint " + in.path.string() + " (" + in.flag +
             "); draftgate never writes into a checkpoint it reads");
    if (in.directory && exists && holds_inode(in.path, st))
      refuse("is a link to a file of the input checkpoint " + in.path.string() + " (" + in.flag +
             "); draftgate never writes over an input");
    if (out.directory && inside(in_real, real))
      refuse("holds the input " + in.path.string() + " (" + in.flag + ")");
  }
}

}  // namespace

void check_outputs(const std::vector<RunPath>& outputs, const std::vector<RunPath>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path.empty()) continue;
    check_one(outputs[i], inputs);
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && resolved(outputs[j].path) == resolved(outputs[i].path))
        throw Error(outputs[i].flag + " " + outputs[i].path.string(),
                    "is also the output of " + outputs[j].flag, "give each output its own file");
  }
}

}  // namespace draftgate::io
