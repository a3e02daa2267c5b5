#include "eval_text.h"

#include <filesystem>

#include "draftgate/error.h"

namespace draftgate::cli {

OutputDecoder output_decoder(const std::string& target_dir) {
  OutputDecoder d;
  const std::filesystem::path file = std::filesystem::path(target_dir) / "tokenizer.json";
  d.file = file.string();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    d.unavailable = "the target checkpoint " + target_dir + " has no tokenizer.json";
    return d;
  }
  try {
    d.tokenizer.emplace(tokenizer::Tokenizer::load(file));
  } catch (const Error& e) {
    d.unreadable = true;
    d.unavailable = "draftgate cannot read the target's tokenizer: " + e.one_line();
  }
  return d;
}

void add_output_text(nlohmann::json& evaluation, const OutputDecoder& decoder) {
  if (!decoder.tokenizer) {
    evaluation["output_text"] = {{"tokenizer", nullptr}, {"unavailable", decoder.unavailable}};
    for (auto& p : evaluation["per_prompt"]) p["output_text"] = nullptr;
    return;
  }
  evaluation["output_text"] = {{"tokenizer", decoder.file}, {"skip_special_tokens", false}};
  for (auto& p : evaluation["per_prompt"]) {
    try {
      p["output_text"] =
          decoder.tokenizer->decode(p["output_ids"].get<std::vector<std::int32_t>>(), false);
    } catch (const Error& e) {
      p["output_text"] = nullptr;
      p["output_text_unavailable"] = e.one_line();
    }
  }
}

}  // namespace draftgate::cli
