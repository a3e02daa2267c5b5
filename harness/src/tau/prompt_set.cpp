#include "draftgate/tau/prompt_set.h"

#include <set>
#include <sstream>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/sha256.h"

namespace draftgate::decode {

std::string prompts_sha256(const std::vector<Prompt>& prompts) {
  io::Sha256 h;
  h.update("draftgate.prompt_set/1\n");
  for (const auto& p : prompts) h.update(nlohmann::json::array({p.id, p.input_ids}).dump() + "\n");
  return h.hex_digest();
}

namespace {

PromptSet parse_prompt_set(const std::filesystem::path& path) {
  const std::string bytes = io::read_input_file(path, io::kMaxJsonBytes, "a JSONL prompt set");

  PromptSet set;
  set.path = path.string();
  set.file_sha256 = io::sha256_hex(bytes);
  std::set<std::string> ids;
  std::istringstream lines(bytes);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path.string() + ":" + std::to_string(number);
    const auto j = io::parse_json_strict(line, where);
    if (!j.is_object()) throw Error(where, "a prompt line must be a JSON object");
    Prompt p;
    if (!j.contains("id") || !(j["id"].is_string() || j["id"].is_number_integer()))
      throw Error(where, "missing \"id\" (a string)");
    p.id = j["id"].is_string() ? j["id"].get<std::string>()
                               : std::to_string(j["id"].get<std::int64_t>());
    if (p.id.empty()) throw Error(where, "empty \"id\"");
    if (!ids.insert(p.id).second) throw Error(where, "duplicate id \"" + p.id + "\"");
    if (!j.contains("input_ids") || !j["input_ids"].is_array() || j["input_ids"].empty())
      throw Error(where, "\"input_ids\" must be a non-empty array of token ids",
                  "tokenize the prompt first; draftgate does not tokenize text");
    for (const auto& t : j["input_ids"]) {
      if (!t.is_number_integer() || t.get<std::int64_t>() < 0)
        throw Error(where, "input_ids holds " + io::json_excerpt(t) +
                               ", not a non-negative integer token id");
      p.input_ids.push_back(t.get<std::int64_t>());
    }
    if (j.contains("text")) {
      if (!j["text"].is_string()) throw Error(where, "\"text\" must be a string");
      p.text = j["text"].get<std::string>();
    }
    set.prompts.push_back(std::move(p));
  }
  if (set.prompts.empty()) throw Error(path.string(), "prompt set is empty");
  set.sha256 = prompts_sha256(set.prompts);
  return set;
}

}  // namespace

PromptSet read_prompt_set(const std::filesystem::path& path, const std::string& origin) {
  try {
    return parse_prompt_set(path);
  } catch (const Error& e) {
    throw Error(e.file(), e.problem() + " (the prompt set named by " + origin + ")", e.hint());
  }
}

}  // namespace draftgate::decode
