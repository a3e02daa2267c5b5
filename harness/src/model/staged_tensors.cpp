#include "draftgate/model/staged_tensors.h"

#include <algorithm>
#include <cstdlib>

#include "draftgate/io/direct_read.h"
#include "draftgate/model/tensor_view.h"
#include "draftgate/model/weight_buffers.h"
#include "huge_page_block.h"

namespace draftgate::model {
namespace {

constexpr std::uint64_t kAlign = io::kDirectReadAlignment;
// Tensors closer than this in a file are read as one range: a request is dearer than the gap.
constexpr std::uint64_t kMergeGap = std::uint64_t{1} << 20;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

at::Tensor StagedTensors::find(std::string_view name) const {
  const auto it = views_.find(name);
  return it == views_.end() ? at::Tensor() : it->second;
}

bool StagedTensors::verified_finite(std::string_view name) const {
  return finite_.find(name) != finite_.end();
}

// Memory on huge pages where the kernel gives them (huge_page_block.h).
struct TensorStager::Buffer {
  explicit Buffer(std::uint64_t bytes) {
    const HugePageBlock block = allocate_huge_page_block(bytes);
    data = static_cast<char*>(block.data);
    size = block.size;
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data = nullptr;
  std::uint64_t size = 0;
};

// Where each file range goes in the buffer, and where each tensor lies in it.
struct TensorStager::Plan {
  struct Range {
    std::uint64_t offset, length, at;  // file bytes [offset, offset + length) to buffer[at]
    std::uint64_t needed;              // up to the last tensor's last byte
  };
  struct Placed {
    std::string name;
    const io::TensorInfo* info;
    std::uint64_t at;  // the tensor's first byte in the buffer
  };
  std::map<std::filesystem::path, std::vector<Range>> ranges;
  std::vector<Placed> tensors;
  std::uint64_t bytes = 0;
};

TensorStager::Plan TensorStager::plan(const std::vector<std::string>& names) const {
  struct Stored {
    std::uint64_t begin;  // in the file
    std::size_t index;    // into names
  };
  std::map<std::filesystem::path, std::vector<Stored>> by_file;
  Plan p;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& file = checkpoint_.file_of(names[i]);
    const io::TensorInfo& info = *checkpoint_.info(names[i]);
    by_file[file->path()].push_back({file->header().data_offset + info.begin, i});
    p.tensors.push_back({names[i], &info, 0});
  }
  for (auto& [path, stored] : by_file) {
    std::sort(stored.begin(), stored.end(),
              [](const Stored& a, const Stored& b) { return a.begin < b.begin; });
    std::vector<Plan::Range>& ranges = p.ranges[path];
    for (const Stored& s : stored) {
      const std::uint64_t begin = s.begin / kAlign * kAlign;
      const std::uint64_t last = s.begin + p.tensors[s.index].info->nbytes();
      const std::uint64_t end = round_up(last, kAlign);
      if (ranges.empty() || begin > ranges.back().offset + ranges.back().length + kMergeGap) {
        ranges.push_back({begin, end - begin, p.bytes, 0});
        p.bytes += end - begin;
      } else if (end > ranges.back().offset + ranges.back().length) {
        const std::uint64_t grow = end - (ranges.back().offset + ranges.back().length);
        ranges.back().length += grow;
        p.bytes += grow;
      }
      Plan::Range& r = ranges.back();
      r.needed = std::max(r.needed, last - r.offset);
      p.tensors[s.index].at = r.at + (s.begin - r.offset);
    }
  }
  return p;
}

std::uint64_t TensorStager::staged_bytes(const std::vector<std::string>& names) const {
  return plan(names).bytes;
}

std::shared_ptr<TensorStager::Buffer> TensorStager::take(std::uint64_t bytes) {
  std::shared_ptr<Buffer>* best = nullptr;
  for (auto& b : buffers_)
    if (b.use_count() == 1 && b->size >= bytes && (best == nullptr || b->size < (*best)->size))
      best = &b;
  if (best != nullptr) return *best;
  // None fits: the free ones go before a bigger one is made, so a walk holds two buffers.
  buffers_.erase(
      std::remove_if(buffers_.begin(), buffers_.end(),
                     [](const std::shared_ptr<Buffer>& b) { return b.use_count() == 1; }),
      buffers_.end());
  buffers_.push_back(std::make_shared<Buffer>(std::max<std::uint64_t>({bytes, reserved_, 1})));
  return buffers_.back();
}

std::future<StagedTensors> TensorStager::stage(const std::vector<std::string>& names) {
  Plan p = plan(names);
  std::shared_ptr<Buffer> buffer = take(p.bytes);
  // Nothing of this stager is touched by the read; the views are made once the bytes are there
  // (a view of misaligned data is a copy).
  return std::async(std::launch::async, [p = std::move(p), buffer = std::move(buffer)]() mutable {
    for (const auto& [path, ranges] : p.ranges) {
      std::vector<io::ReadRequest> requests;
      for (const Plan::Range& r : ranges)
        requests.push_back({r.offset, r.length, r.needed, buffer->data + r.at});
      io::read_direct(path, requests);
    }
    StagedTensors staged;
    for (const Plan::Placed& t : p.tensors) {
      const at::Tensor view = io::tensor_view(
          std::string_view(buffer->data + t.at, static_cast<std::size_t>(t.info->nbytes())),
          *t.info, buffer);
      // A value that is not finite is the loader's to name, with the tensor, when it is used.
      if (view.is_contiguous() && values_finite(view.data_ptr(), view.numel(), view.scalar_type()))
        staged.finite_.insert(t.name);
      staged.views_[t.name] = view;
    }
    // Only the views hold the buffer now: the task's own state may outlive get() for a moment,
    // and a buffer it still held would not be free for the next read.
    buffer.reset();
    return staged;
  });
}

}  // namespace draftgate::model
