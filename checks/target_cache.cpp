#include "checks/target_cache.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "draftgate/model/memory_budget.h"
#include "draftgate/progress.h"

namespace draftgate::checks {
namespace {

namespace fs = std::filesystem;

// The checkpoint's directory and the size and modification time of its config and shards: a
// checkpoint rewritten in place is another checkpoint.
std::string identity(const io::Checkpoint& checkpoint) {
  std::string id = fs::absolute(checkpoint.dir()).lexically_normal().string();
  std::vector<std::string> files = checkpoint.shard_names();
  files.push_back("config.json");
  for (const auto& name : files) {
    std::error_code ec;
    const fs::path file = checkpoint.dir() / name;
    const auto size = fs::file_size(file, ec);
    const auto time = fs::last_write_time(file, ec).time_since_epoch().count();
    id += "\n" + name + " " + std::to_string(ec ? 0 : size) + " " + std::to_string(time);
  }
  return id;
}

struct Cache {
  std::mutex mutex;
  std::string checkpoint;
  // By dtype, GDN algorithm, device and whether streamed (the path follows the memory budget at
  // the time of asking).
  using Key = std::tuple<at::ScalarType, model::GdnAlgorithm, std::string, bool>;
  std::map<Key, std::unique_ptr<model::SequenceTarget>> sequence;
  std::map<at::ScalarType, std::unique_ptr<model::TargetModel>> heads;
  // The last streamed walk's forwards, with their logits and taps: a streamed forward reads the
  // whole checkpoint, and the checks ask for the same float32 forward over the same ids (the record
  // probe and fc_excludes_target_layer first: they tap every layer) and, for the precision models,
  // the bf16 one, which that walk computes beside it.
  struct StoredForward {
    const model::SequenceTarget* target = nullptr;
    std::vector<std::int64_t> tokens;
    model::ForwardResult result;
  };
  std::vector<StoredForward> last;
  std::optional<io::Checkpoint> opened;
  bool bf16_expected = true;

  // Drops what belongs to another checkpoint.
  void select(const io::Checkpoint& ckpt) {
    std::string id = identity(ckpt);
    if (id == checkpoint) return;
    sequence.clear();
    heads.clear();
    last.clear();
    opened = ckpt;
    checkpoint = std::move(id);
  }
};

Cache& cache() {
  static Cache c;
  return c;
}

model::TargetOptions options_at(at::ScalarType dtype) {
  model::TargetOptions options;
  options.dtype = dtype;
  options.dtype_flag = "";  // the checks' float32 reference has no cheaper stand-in
  return options;
}

// The target of `key` for the selected checkpoint, opened on first use.
const model::SequenceTarget& slot_for(Cache& c, const Cache::Key& key) {
  auto& slot = c.sequence[key];
  if (!slot) {
    const auto& [dtype, gdn, device, streamed] = key;
    model::TargetOptions options = options_at(dtype);
    options.gdn = gdn;
    options.device = at::Device(device);
    slot = model::open_sequence_target(
        *c.opened, options, streamed ? model::TargetPath::kStreamed : model::TargetPath::kInMemory);
  }
  return *slot;
}

bool streamed_at(const io::Checkpoint& checkpoint, at::ScalarType dtype) {
  return !model::fits_in_memory(checkpoint, layout::resolve_decoder_stack(checkpoint), dtype);
}

// The bf16 target whose forward a float32 streamed walk of `target` computes beside its own, or
// nullptr: where the run expects the checks to ask for it (the precision models of bf16 and
// undeclared records), they would stream it too, and both results fit an eighth of the memory
// budget each.
const model::StreamedTarget* bf16_companion(Cache& c, const model::SequenceTarget& target,
                                            std::size_t positions, std::size_t taps) {
  if (!c.bf16_expected || !target.streamed() || target.dtype() != at::kFloat) return nullptr;
  const auto held = std::find_if(c.sequence.begin(), c.sequence.end(),
                                 [&](const auto& entry) { return entry.second.get() == &target; });
  if (held == c.sequence.end() || !streamed_at(*c.opened, at::kBFloat16)) return nullptr;
  const auto& config = target.config();
  const auto bytes =
      static_cast<std::uint64_t>(positions) *
      static_cast<std::uint64_t>(static_cast<std::int64_t>(taps) * config.hidden + config.vocab) *
      sizeof(float);
  const std::uint64_t budget = model::available_memory_bytes();
  if (budget != 0 && bytes > budget / 8) return nullptr;
  const auto& [dtype, gdn, device, streamed] = held->first;
  return dynamic_cast<const model::StreamedTarget*>(
      &slot_for(c, {at::kBFloat16, gdn, device, true}));
}

}  // namespace

const model::SequenceTarget& sequence_target(const io::Checkpoint& checkpoint, at::ScalarType dtype,
                                             model::GdnAlgorithm gdn, at::Device device) {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.select(checkpoint);
  return slot_for(c, {dtype, gdn, device.str(), streamed_at(checkpoint, dtype)});
}

const model::TargetModel& target_head(const io::Checkpoint& checkpoint, at::ScalarType dtype) {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.select(checkpoint);
  const Cache::Key in_memory = {dtype, model::GdnAlgorithm::kChunked, "cpu", false};
  if (auto it = c.sequence.find(in_memory); it != c.sequence.end())
    return dynamic_cast<const model::InMemoryTarget&>(*it->second).model();
  auto& slot = c.heads[dtype];
  if (!slot) {
    model::TargetOptions options = options_at(dtype);
    options.head_only = true;
    slot = model::TargetModel::load(checkpoint, options);
  }
  return *slot;
}

void expect_bf16_forwards(bool expected) {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.bf16_expected = expected;
}

bool bf16_forwards_expected() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  return c.bf16_expected;
}

model::ForwardResult forward_with_progress(const std::string& check,
                                           const model::SequenceTarget& target,
                                           const std::vector<std::int64_t>& tokens,
                                           const std::vector<std::int64_t>& taps,
                                           bool want_logits) {
  Cache& c = cache();
  const model::StreamedTarget* companion = nullptr;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (const auto& stored : c.last) {
      const bool same = stored.target == &target && stored.tokens == tokens &&
                        std::all_of(taps.begin(), taps.end(), [&](std::int64_t t) {
                          return stored.result.taps.count(t) > 0;
                        });
      if (!same) continue;
      model::ForwardResult r;
      if (want_logits) r.logits = stored.result.logits;
      for (auto t : taps) r.taps[t] = stored.result.taps.at(t);
      return r;
    }
    companion = bf16_companion(c, target, tokens.size(), taps.size());
  }
  Progress progress("check " + check, "layer", target.config().num_layers);
  const auto on_layer = [&](std::int64_t done, std::int64_t) { progress.update(done); };
  if (!target.streamed()) return target.forward(tokens, taps, want_logits, on_layer);
  // A streamed target computes the logits in any case (one more pass over lm_head) so that the
  // result serves the next check too.
  std::vector<const model::StreamedTarget*> walk = {
      &dynamic_cast<const model::StreamedTarget&>(target)};
  if (companion != nullptr) walk.push_back(companion);
  std::vector<model::ForwardResult> results =
      model::StreamedTarget::forward_together(walk, tokens, taps, true, on_layer);
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.last.clear();
    for (std::size_t k = 0; k < walk.size(); ++k) c.last.push_back({walk[k], tokens, results[k]});
  }
  model::ForwardResult r = std::move(results.front());
  if (!want_logits) r.logits = at::Tensor();
  return r;
}

}  // namespace draftgate::checks
