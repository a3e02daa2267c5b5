// Input: a config.json; interpreted as a target config (text-config nesting, layer counts and
// types, tie flag) against a fixed Qwen3.6 tensor list, and as a DFlash drafter config.
#include <fstream>

#include "draftgate/arch/target_config.h"
#include "draftgate/io/config.h"
#include "draftgate/io/json_util.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/dflash.h"
#include "fuzz_input.h"

namespace {
const std::vector<std::string>& qwen36_names() {
  static const std::vector<std::string> names = [] {
    const auto index = draftgate::io::read_json_file(
        std::string(DRAFTGATE_SOURCE_DIR) +
        "/fixtures/real-layouts/qwen36-27b-awq-fantasylord/model.safetensors.index.json");
    std::vector<std::string> n;
    for (const auto& [name, shard] : index["weight_map"].items()) n.push_back(name);
    return n;
  }();
  return names;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  draftgate::fuzz::expect_only_draftgate_errors([&] {
    const auto config = draftgate::io::ModelConfig::from_json(
        draftgate::io::parse_json_strict(text, "config.json"), "config.json");
    draftgate::fuzz::expect_only_draftgate_errors(
        [&] { draftgate::model::DrafterConfig::from(config); });
    const auto stack = draftgate::layout::resolve_decoder_stack(qwen36_names(), config, "fuzz");
    draftgate::model::TargetConfig::from(config, stack);
  });
  return 0;
}
