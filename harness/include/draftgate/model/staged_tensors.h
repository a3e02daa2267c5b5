#pragma once
// A set of stored tensors (a decoder layer's) read into this process's memory with direct reads
// (io/direct_read.h) instead of through the mapping, in the background while the layer before
// computes: views of the stored bytes, as io::load_tensor gives them. Each read lands in a buffer
// whose views are all gone, so a walk over the layers faults its memory in once (two buffers),
// and the kernel neither fills nor drops the page cache for it. Each float tensor is checked for
// NaN and Inf on the read's thread, beside the compute.

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "draftgate/io/checkpoint.h"

namespace draftgate::model {

class StagedTensors {
 public:
  // Tensor `name` as stored (its checkpoint dtype and shape), or an undefined tensor when it was
  // not staged. Valid after its StagedTensors is gone, as long as it is held.
  at::Tensor find(std::string_view name) const;
  // Whether staged tensor `name` was read, a float dtype, and found to hold no NaN or Inf: the
  // read's thread scans each tensor as it arrives, so the loaders of the walk's targets need not.
  bool verified_finite(std::string_view name) const;

 private:
  friend class TensorStager;
  std::map<std::string, at::Tensor, std::less<>> views_;
  std::set<std::string, std::less<>> finite_;
};

class TensorStager {
 public:
  // The checkpoint must outlive the stager and every read it started.
  explicit TensorStager(const io::Checkpoint& checkpoint) : checkpoint_(checkpoint) {}

  // The stored bytes `names` take in memory, their file ranges rounded to whole blocks.
  std::uint64_t staged_bytes(const std::vector<std::string>& names) const;
  // Starts reading tensors `names` of the checkpoint; get() waits for them (and rethrows the
  // draftgate::Error of a failed read, naming the file).
  std::future<StagedTensors> stage(const std::vector<std::string>& names);
  // Makes every buffer at least `bytes` (the largest read to come), so one buffer serves reads
  // of any size.
  void reserve(std::uint64_t bytes) { reserved_ = std::max(reserved_, bytes); }

 private:
  struct Buffer;
  struct Plan;
  Plan plan(const std::vector<std::string>& names) const;
  // A buffer of at least `bytes` that no view holds.
  std::shared_ptr<Buffer> take(std::uint64_t bytes);

  const io::Checkpoint& checkpoint_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
  std::uint64_t reserved_ = 0;
};

}  // namespace draftgate::model
