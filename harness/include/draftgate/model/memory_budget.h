#pragma once
// Refusing what cannot fit: a model whose weights must be materialised (converted to another dtype,
// or copied for training) is checked against the memory the machine has available before anything
// is allocated, so a run ends with a clear message instead of the OOM killer.

#include <cstdint>
#include <string>

#include "draftgate/io/checkpoint.h"
#include "draftgate/layout/decoder_stack.h"

namespace draftgate::model {

// The memory budget in bytes: MemAvailable from /proc/meminfo, capped by the environment variable
// DRAFTGATE_MEMORY_BUDGET_MIB when set (to keep a run inside a share of a bigger machine, or to
// try the streamed path on a small model); 0 when unknown and uncapped.
inline constexpr const char* kMemoryBudgetVariable = "DRAFTGATE_MEMORY_BUDGET_MIB";
std::uint64_t available_memory_bytes();

// Bytes the text stack's weights need beyond the mapping when loaded as `element_bytes`-byte
// elements: every tensor stored at another width is converted into new memory, except the bf16
// linear weights a float32 load keeps as stored (WeightLoader::get_linear: the decoder layers'
// `*_proj.weight`, fused `experts.gate_up_proj` / `experts.down_proj`, and an untied lm_head);
// `copy_all` (training) copies every one. Without `with_layers`: the embedding,
// final norm and lm_head only.
std::uint64_t materialised_weight_bytes(const io::Checkpoint& checkpoint,
                                        const layout::DecoderStack& stack,
                                        std::size_t element_bytes, bool copy_all,
                                        bool with_layers = true);

// Throws draftgate::Error naming the checkpoint when `bytes` exceed the available memory, with
// `hint` (what avoids it: the flag to pass).
void require_memory(const io::Checkpoint& checkpoint, std::uint64_t bytes, const std::string& why,
                    const std::string& hint);

}  // namespace draftgate::model
