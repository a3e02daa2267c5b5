#include "draftgate/model/draft_vocab.h"

#include <limits>
#include <string>

#include "draftgate/arch/drafter.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::model {

namespace {

bool has(const io::Checkpoint& c, const std::string& name) {
  for (const auto& n : c.names())
    if (n == name) return true;
  return false;
}

std::string shape_text(const at::Tensor& t) {
  std::vector<std::int64_t> dims(t.sizes().begin(), t.sizes().end());
  return "[" + format_ids(dims) + "]";
}

// d2t as int64 [n], or draftgate::Error naming the tensor.
at::Tensor read_d2t(const io::Checkpoint& c, std::int64_t n) {
  const at::Tensor d2t = io::load_tensor(c, "d2t");
  if (d2t.scalar_type() != at::kLong && d2t.scalar_type() != at::kInt)
    throw Error(c.dir().string(), "tensor \"d2t\" has dtype " +
                                      std::string(c10::toString(d2t.scalar_type())) +
                                      "; the draft-to-target offsets are integers (I64)");
  if (d2t.dim() != 1 || d2t.size(0) != n)
    throw Error(c.dir().string(), "tensor \"d2t\" has shape " + shape_text(d2t) + ", expected [" +
                                      std::to_string(n) + "] (draft_vocab_size)");
  return d2t.to(at::kLong).contiguous();
}

// t2d as bool [n], or draftgate::Error naming the tensor.
at::Tensor read_t2d(const io::Checkpoint& c, std::int64_t n) {
  const at::Tensor t2d = io::load_tensor(c, "t2d");
  if (t2d.scalar_type() != at::kBool)
    throw Error(c.dir().string(), "tensor \"t2d\" has dtype " +
                                      std::string(c10::toString(t2d.scalar_type())) +
                                      "; the target-to-draft mask is BOOL");
  if (t2d.dim() != 1 || t2d.size(0) != n)
    throw Error(c.dir().string(), "tensor \"t2d\" has shape " + shape_text(t2d) + ", expected [" +
                                      std::to_string(n) + "] (the target's vocabulary)");
  return t2d.contiguous();
}

}  // namespace

at::Tensor draft_to_target_ids(const io::Checkpoint& c, std::int64_t draft_vocab,
                               std::int64_t target_vocab) {
  const std::string where = c.dir().string();
  if (draft_vocab == target_vocab) {
    // speculators ignores the maps of a full vocabulary (speculators/model.py :97-102) and vLLM
    // builds no draft_id_to_target_id: only the identity means the same to both.
    if (has(c, "d2t") && read_d2t(c, draft_vocab).ne(0).any().item<bool>())
      throw Error(where,
                  "tensor \"d2t\" is not all zeros but draft_vocab_size equals the target's "
                  "vocabulary (" +
                      std::to_string(target_vocab) + ")",
                  "give the reduced draft_vocab_size the drafter was trained with");
    if (has(c, "t2d") && !read_t2d(c, target_vocab).all().item<bool>())
      throw Error(where,
                  "tensor \"t2d\" leaves target ids out but draft_vocab_size equals the "
                  "target's vocabulary (" +
                      std::to_string(target_vocab) + ")",
                  "give the reduced draft_vocab_size the drafter was trained with");
    return {};
  }
  require_draft_vocab_tensors(c.names(), draft_vocab, target_vocab, where);
  const at::Tensor targets = at::arange(draft_vocab, at::kLong) + read_d2t(c, draft_vocab);
  const auto* t = targets.data_ptr<std::int64_t>();
  std::vector<std::int64_t> owner(static_cast<std::size_t>(target_vocab), -1);
  for (std::int64_t i = 0; i < draft_vocab; ++i) {
    if (t[i] < 0 || t[i] >= target_vocab)
      throw Error(where, "tensor \"d2t\" maps draft id " + std::to_string(i) + " to target id " +
                             std::to_string(t[i]) + ", outside the target's vocabulary (0.." +
                             std::to_string(target_vocab - 1) + ")");
    auto& o = owner[static_cast<std::size_t>(t[i])];
    if (o >= 0)
      throw Error(where,
                  "tensor \"d2t\" maps draft ids " + std::to_string(o) + " and " +
                      std::to_string(i) + " to the same target id " + std::to_string(t[i]),
                  "each draft id must have its own target id (vLLM scatters the draft logits "
                  "into the target vocabulary; two ids would overwrite each other)");
    o = i;
  }
  if (has(c, "t2d")) {
    const at::Tensor t2d = read_t2d(c, target_vocab);
    const auto* kept = t2d.data_ptr<bool>();
    for (std::int64_t id = 0; id < target_vocab; ++id)
      if (kept[id] != (owner[static_cast<std::size_t>(id)] >= 0))
        throw Error(where,
                    "tensor \"t2d\" " + std::string(kept[id] ? "marks" : "does not mark") +
                        " target id " + std::to_string(id) + ", which d2t " +
                        (kept[id] ? "maps no draft id to" : "maps a draft id to"),
                    "t2d must mark exactly the target ids d2t maps to (speculators "
                    "build_vocab_mappings_from_distribution)");
  }
  return targets;
}

at::Tensor scatter_to_target_vocab(const at::Tensor& draft_logits, const at::Tensor& targets,
                                   std::int64_t target_vocab) {
  auto sizes = draft_logits.sizes().vec();
  sizes.back() = target_vocab;
  return at::full(sizes, -std::numeric_limits<double>::infinity(), draft_logits.options())
      .index_copy(-1, targets, draft_logits);
}

}  // namespace draftgate::model
