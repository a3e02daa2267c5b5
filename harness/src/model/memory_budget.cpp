#include "draftgate/model/memory_budget.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include "draftgate/error.h"

namespace draftgate::model {

namespace {

std::uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace

std::uint64_t available_memory_bytes() {
  const std::uint64_t available = mem_available();
  const char* cap = std::getenv(kMemoryBudgetVariable);
  if (cap == nullptr || *cap == '\0') return available;
  char* end = nullptr;
  errno = 0;
  const unsigned long long mib = std::strtoull(cap, &end, 10);
  if (errno != 0 || *end != '\0' || *cap == '-' || mib == 0 || mib > (1ull << 40))
    throw Error(kMemoryBudgetVariable, "\"" + std::string(cap) + "\" is not a number of MiB",
                "set it to a positive whole number of MiB, or unset it");
  const std::uint64_t bytes = static_cast<std::uint64_t>(mib) << 20;
  return available == 0 ? bytes : std::min(available, bytes);
}

namespace {

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The tensors the engine multiplies only by dense(): the layers' `*_proj.weight` and the fused
// experts' `experts.gate_up_proj` / `experts.down_proj` (WeightLoader::get_linear).
bool is_linear_weight(const std::string& name) {
  return ends_with(name, "_proj.weight") || ends_with(name, ".experts.gate_up_proj") ||
         ends_with(name, ".experts.down_proj");
}

}  // namespace

std::uint64_t materialised_weight_bytes(const io::Checkpoint& checkpoint,
                                        const layout::DecoderStack& stack,
                                        std::size_t element_bytes, bool copy_all,
                                        bool with_layers) {
  std::uint64_t total = 0;
  for (const auto& name : checkpoint.names()) {
    const bool used = (with_layers && name.rfind(stack.prefix + ".", 0) == 0) ||
                      name == stack.embed_tokens || name == stack.final_norm ||
                      name == stack.lm_head;
    const io::TensorInfo* info = checkpoint.info(name);
    if (!used || info == nullptr) continue;
    const bool kept_as_stored =
        element_bytes == 4 && info->dtype == io::DType::BF16 &&
        (is_linear_weight(name) || (name == stack.lm_head && !stack.tied_embeddings));
    if (copy_all || (io::dtype_size(info->dtype) != element_bytes && !kept_as_stored))
      total += info->numel() * element_bytes;
  }
  return total;
}

void require_memory(const io::Checkpoint& checkpoint, std::uint64_t bytes, const std::string& why,
                    const std::string& hint) {
  const std::uint64_t available = available_memory_bytes();
  if (available == 0 || bytes <= available) return;
  auto gib = [](std::uint64_t b) {
    std::ostringstream s;
    s.precision(3);
    s << static_cast<double>(b) / (1ull << 30) << " GiB";
    return s.str();
  };
  throw Error(checkpoint.dir().string(),
              why + " needs " + gib(bytes) + " of memory but " + gib(available) + " is available",
              hint);
}

}  // namespace draftgate::model
