#pragma once
// A Hugging Face checkpoint directory: config.json plus safetensors weights, single-file or sharded
// through model.safetensors.index.json. Opening reads config.json and the safetensors headers,
// never tensor data.
//
// A directory with config.json and an index but none of the shards is "metadata-only": names are
// known, dtypes and shapes are not, and no tensor can be loaded. Structural checks run on it.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "draftgate/io/config.h"
#include "draftgate/io/safetensors.h"

namespace draftgate::io {

class Checkpoint {
 public:
  static Checkpoint open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const ModelConfig& config() const { return *config_; }
  bool metadata_only() const { return metadata_only_; }
  // Every tensor name, sorted.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  // Header entry of a tensor; nullptr when the tensor is absent or the checkpoint is metadata-only.
  const TensorInfo* info(std::string_view name) const;
  // The shard holding `name` (throws draftgate::Error when absent or metadata-only).
  const std::shared_ptr<const SafetensorsFile>& file_of(std::string_view name) const;
  // Shard file names (relative to dir) in sorted order.
  std::vector<std::string> shard_names() const;
  // SafetensorsFile::settle_in_huge_pages on each shard: for a model held in memory, after its
  // load.
  void settle_in_huge_pages() const;
  // SafetensorsFile::mapped_pages summed over the shards mapped so far; nullopt where none is, or
  // /proc/self/smaps cannot be read.
  std::optional<MappedPages> mapped_pages() const;

 private:
  struct Entry {
    std::string shard;
    const TensorInfo* info = nullptr;
  };

  std::filesystem::path dir_;
  std::shared_ptr<const ModelConfig> config_;
  bool metadata_only_ = false;
  std::vector<std::string> names_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, std::shared_ptr<const SafetensorsFile>, std::less<>> shards_;
};

// DIR/config.json; throws draftgate::Error naming it when it is missing (an empty directory, a
// folder of weights only): what Checkpoint::open and check's pre-flight say.
std::filesystem::path require_checkpoint_config(const std::filesystem::path& dir);

// True for a directory holding config.json and no weights at all (no index, no *.safetensors):
// a trainer's config written before its first checkpoint. The checks that read only configs run
// on it; the checks that read weights skip it by name (Check::reads_drafter_weights).
bool config_only(const std::filesystem::path& dir);

}  // namespace draftgate::io
