// Input: tensor names, one per line, resolved against a fixed Qwen3 config.
#include <sstream>

#include "draftgate/io/config.h"
#include "draftgate/io/json_util.h"
#include "draftgate/layout/decoder_stack.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto config = draftgate::io::ModelConfig::load(
      std::string(DRAFTGATE_SOURCE_DIR) + "/fixtures/trained/qwen3-target/config.json");
  std::vector<std::string> names;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line);) names.push_back(line);
  draftgate::fuzz::expect_only_draftgate_errors(
      [&] { draftgate::layout::resolve_decoder_stack(names, config, "fuzz"); });
  return 0;
}
