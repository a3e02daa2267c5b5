#include "draftgate/io/checkpoint.h"

#include <algorithm>
#include <optional>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"

namespace draftgate::io {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A shard must resolve inside the checkpoint — or, for a Hugging Face hub cache snapshot
// (.../snapshots/REV/), inside the same repository's blobs/ — never to an arbitrary file.
void require_inside(const fs::path& dir, const fs::path& file) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(file, ec);
  const fs::path root = fs::weakly_canonical(dir, ec);
  auto within = [&](const fs::path& base) {
    const auto rel = real.lexically_relative(base);
    return !rel.empty() && *rel.begin() != "..";
  };
  const bool hub_snapshot = root.parent_path().filename() == "snapshots";
  if (within(root) || (hub_snapshot && within(root.parent_path().parent_path() / "blobs"))) return;
  throw Error(file.string(),
              "is a symlink pointing outside the checkpoint (to " + real.string() + ")",
              "copy the file into the checkpoint directory");
}

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// A shard named by the index must be a plain file name inside the checkpoint directory.
void check_shard_name(const std::string& shard, const fs::path& index) {
  const bool plain = !shard.empty() && shard.find('/') == std::string::npos &&
                     shard.find('\\') == std::string::npos && shard != "." && shard != "..";
  if (!plain)
    throw Error(index.string(),
                "weight_map names shard \"" + shard +
                    "\", which is not a plain file name in the checkpoint directory");
}

// weight_map: tensor name -> shard file name.
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  const json root = read_json_file(index);
  if (!root.is_object()) throw Error(index.string(), "index is not a JSON object");
  auto it = root.find("weight_map");
  if (it == root.end()) throw Error(index.string(), "missing \"weight_map\"");
  if (!it->is_object()) throw Error(index.string(), "\"weight_map\" is not an object");
  std::map<std::string, std::string> map;
  for (const auto& [name, shard] : it->items()) {
    if (!shard.is_string())
      throw Error(index.string(), "weight_map entry \"" + name + "\" is not a file name string");
    check_shard_name(shard.get<std::string>(), index);
    map.emplace(name, shard.get<std::string>());
  }
  if (map.empty()) throw Error(index.string(), "weight_map is empty");
  return map;
}

bool is_consolidated(const std::string& file_name) {
  return file_name.rfind("consolidated", 0) == 0;  // Mistral-native duplicates of the HF shards
}

// The weights in PyTorch's pickle format transformers saves (pytorch_model.bin, or its shards
// pytorch_model-00001-of-00002.bin), which draftgate does not read: unpickling runs code. Other
// pickles beside a checkpoint (training_args.bin, optimizer.pt, mask_embedding.pt) are not weights.
std::optional<std::string> pickled_weights(const fs::path& dir) {
  std::error_code ec;
  std::optional<std::string> first;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("pytorch_model", 0) == 0 && e.path().extension() == ".bin" &&
        (!first || name < *first))
      first = name;
  }
  return first;
}

}  // namespace

fs::path require_checkpoint_config(const fs::path& dir) {
  std::error_code ec;
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(fs::symlink_status(config_path, ec)))
    throw Error(config_path.string(), "missing",
                "a Hugging Face checkpoint directory holds config.json beside its weights");
  return config_path;
}

bool config_only(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec) ||
      fs::exists(fs::symlink_status(dir / kIndexName, ec)))
    return false;
  // Any safetensors file (a consolidated duplicate too) is weights, whatever open() reads; pickled
  // weights are weights too, which open() refuses.
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") return false;
  return !ec && !pickled_weights(dir);
}

Checkpoint Checkpoint::open(const fs::path& dir) {
  std::error_code ec;
  require_input_directory(dir,
                          "pass a checkpoint directory holding config.json and safetensors files");
  Checkpoint ckpt;
  ckpt.dir_ = dir;
  const fs::path config_path = require_checkpoint_config(dir);
  ckpt.config_ = std::make_shared<const ModelConfig>(ModelConfig::load(config_path));

  std::map<std::string, std::string> weight_map;  // name -> shard
  const fs::path index = dir / kIndexName;
  if (fs::exists(index, ec)) {
    weight_map = read_weight_map(index);
    // Loaders disagree on such a directory: transformers loads model.safetensors, vLLM the shards.
    const bool lists_single =
        std::any_of(weight_map.begin(), weight_map.end(),
                    [](const auto& entry) { return entry.second == kSingleName; });
    if (!lists_single && fs::exists(dir / kSingleName, ec))
      throw Error(dir.string(),
                  "holds both " + std::string(kSingleName) + " and " + kIndexName +
                      ", whose shards are other files",
                  "keep the weights you mean: transformers loads model.safetensors, vLLM the "
                  "index's shards");
    std::vector<std::string> missing;
    for (const auto& [name, shard] : weight_map) {
      (void)name;
      if (ckpt.shards_.count(shard)) continue;
      if (fs::exists(dir / shard, ec)) {
        ckpt.shards_.emplace(shard, nullptr);
      } else if (std::find(missing.begin(), missing.end(), shard) == missing.end()) {
        missing.push_back(shard);
      }
    }
    if (ckpt.shards_.empty()) {
      ckpt.metadata_only_ = true;  // names only: structural checks still run
    } else if (!missing.empty()) {
      throw Error(
          (dir / missing.front()).string(),
          "shard listed in " + std::string(kIndexName) + " is missing (" +
              std::to_string(missing.size()) + " of " +
              std::to_string(missing.size() + ckpt.shards_.size()) + " shards absent)",
          "download every shard, or keep only config.json and the index for structural checks");
    }
  } else {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() == ".safetensors" && !is_consolidated(name)) files.push_back(name);
    }
    std::sort(files.begin(), files.end());
    // Loaders disagree on such a directory too: transformers loads model.safetensors alone, vLLM
    // (no index to filter by) every *.safetensors, a stray file's tensors included.
    if (files.size() > 1 && std::count(files.begin(), files.end(), kSingleName) == 1) {
      const std::string other = files.front() == kSingleName ? files[1] : files.front();
      throw Error(dir.string(),
                  "holds " + std::string(kSingleName) + " and " + other +
                      " without a model.safetensors.index.json",
                  "keep the weights you mean: transformers loads model.safetensors alone, vLLM "
                  "every *.safetensors file");
    }
    const std::optional<std::string> pickled = files.empty() ? pickled_weights(dir) : std::nullopt;
    if (pickled)
      throw Error(dir.string(),
                  "holds " + *pickled +
                      ", PyTorch's pickle format, which draftgate does not read, and no "
                      "*.safetensors",
                  "convert the weights to model.safetensors (safetensors.torch.save_file)");
    if (files.empty())
      throw Error(dir.string(),
                  "no model.safetensors.index.json, model.safetensors or *.safetensors",
                  "is this a Hugging Face checkpoint directory?");
    for (const auto& f : files) ckpt.shards_.emplace(f, nullptr);
  }

  for (auto& [shard, file] : ckpt.shards_) {
    require_inside(dir, dir / shard);
    file = SafetensorsFile::open(dir / shard);
  }

  if (ckpt.metadata_only_) {
    for (const auto& [name, shard] : weight_map) ckpt.entries_.emplace(name, Entry{shard, nullptr});
  } else {
    // Every tensor of every shard: transformers and vLLM load a listed shard whole, so where an
    // index is given each tensor must be listed, and listed in the shard that holds it.
    for (const auto& [shard, file] : ckpt.shards_)
      for (const TensorInfo& info : file->header().tensors) {
        if (!weight_map.empty()) {
          const auto mapped = weight_map.find(info.name);
          if (mapped == weight_map.end())
            throw Error(
                (dir / shard).string(),
                "holds tensor \"" + info.name + "\", which " + kIndexName + " does not list",
                "regenerate the index from the shards");
          if (mapped->second != shard)  // listed elsewhere: that shard may or may not hold it too
            throw Error((dir / shard).string(),
                        "holds tensor \"" + info.name + "\", which " + kIndexName + " lists in " +
                            mapped->second,
                        "regenerate the index from the shards (keep one copy where two hold it)");
        }
        if (!ckpt.entries_.emplace(info.name, Entry{shard, &info}).second)
          throw Error(
              (dir / shard).string(),
              "tensor \"" + info.name + "\" also appears in " + ckpt.entries_.at(info.name).shard,
              "add a model.safetensors.index.json that says which copy is meant");
      }
    for (const auto& [name, shard] : weight_map)
      if (ckpt.entries_.count(name) == 0)
        throw Error(index.string(),
                    "maps \"" + name + "\" to " + shard + ", which has no such tensor");
  }
  if (ckpt.entries_.empty()) throw Error(dir.string(), "checkpoint holds no tensors");
  ckpt.names_.reserve(ckpt.entries_.size());
  for (const auto& [name, entry] : ckpt.entries_) ckpt.names_.push_back(name);
  return ckpt;
}

const TensorInfo* Checkpoint::info(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.info;
}

const std::shared_ptr<const SafetensorsFile>& Checkpoint::file_of(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw Error(dir_.string(), "checkpoint has no tensor \"" + std::string(name) + "\"");
  if (metadata_only_)
    throw Error(dir_.string(),
                "metadata-only checkpoint (index without shards): tensor \"" + std::string(name) +
                    "\" has no data",
                "download the shards to run checks that need weights");
  return shards_.at(it->second.shard);
}

void Checkpoint::settle_in_huge_pages() const {
  for (const auto& [shard, file] : shards_)
    if (file != nullptr) file->settle_in_huge_pages();
}

std::optional<MappedPages> Checkpoint::mapped_pages() const {
  std::optional<MappedPages> sum;
  for (const auto& [shard, file] : shards_) {
    const auto pages = file != nullptr ? file->mapped_pages() : std::nullopt;
    if (!pages) continue;
    if (!sum) sum = MappedPages{};
    sum->resident_bytes += pages->resident_bytes;
    sum->file_huge_bytes += pages->file_huge_bytes;
  }
  return sum;
}

std::vector<std::string> Checkpoint::shard_names() const {
  std::vector<std::string> names;
  for (const auto& [shard, file] : shards_) names.push_back(shard);
  return names;
}

}  // namespace draftgate::io
