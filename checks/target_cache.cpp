#include "checks/target_cache.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
  // The last streamed forward, with its logits and taps: a streamed forward reads the whole
  // checkpoint, and fc_excludes_target_layer and target_logits_noise_free ask for the same float32
  // forward over the same ids (fc first: it taps every layer).
  struct LastForward {
    const model::SequenceTarget* target = nullptr;
    std::vector<std::int64_t> tokens;
    model::ForwardResult result;
  } last;

  // Drops what belongs to another checkpoint.
  void select(const io::Checkpoint& ckpt) {
    std::string id = identity(ckpt);
    if (id == checkpoint) return;
    sequence.clear();
    heads.clear();
    last = {};
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

}  // namespace

const model::SequenceTarget& sequence_target(const io::Checkpoint& checkpoint, at::ScalarType dtype,
                                             model::GdnAlgorithm gdn, at::Device device) {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.select(checkpoint);
  const bool streamed =
      !model::fits_in_memory(checkpoint, layout::resolve_decoder_stack(checkpoint), dtype);
  auto& slot = c.sequence[{dtype, gdn, device.str(), streamed}];
  if (!slot) {
    model::TargetOptions options = options_at(dtype);
    options.gdn = gdn;
    options.device = device;
    slot = model::open_sequence_target(
        checkpoint, options,
        streamed ? model::TargetPath::kStreamed : model::TargetPath::kInMemory);
  }
  return *slot;
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

model::ForwardResult forward_with_progress(const std::string& check,
                                           const model::SequenceTarget& target,
                                           const std::vector<std::int64_t>& tokens,
                                           const std::vector<std::int64_t>& taps,
                                           bool want_logits) {
  Cache& c = cache();
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    const auto& last = c.last;
    const bool same = last.target == &target && last.tokens == tokens &&
                      std::all_of(taps.begin(), taps.end(),
                                  [&](std::int64_t t) { return last.result.taps.count(t) > 0; });
    if (same) {
      model::ForwardResult r;
      if (want_logits) r.logits = last.result.logits;
      for (auto t : taps) r.taps[t] = last.result.taps.at(t);
      return r;
    }
  }
  Progress progress("check " + check, "layer", target.config().num_layers);
  // A streamed target computes the logits in any case (one more pass over lm_head) so that the
  // result serves the next check too.
  model::ForwardResult r =
      target.forward(tokens, taps, want_logits || target.streamed(),
                     [&](std::int64_t done, std::int64_t) { progress.update(done); });
  if (target.streamed()) {
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.last = {&target, tokens, r};
  }
  if (!want_logits) r.logits = at::Tensor();
  return r;
}

}  // namespace draftgate::checks
