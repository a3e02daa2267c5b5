#include "draftgate/tau/prompt_set.h"

#include <set>
#include <sstream>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/sha256.h"
#include "draftgate/tau/prompt_renderer.h"
#include "draftgate/template/chat_template.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::decode {

std::string prompts_sha256(const std::vector<Prompt>& prompts) {
  io::Sha256 h;
  h.update("draftgate.prompt_set/1\n");
  for (const auto& p : prompts) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::array({p.id, p.input_ids});
    if (!p.later_turns.empty()) entry.push_back(p.later_turns);
    h.update(entry.dump() + "\n");
  }
  return h.hex_digest();
}

PromptOptions with_target_tokenizer(PromptOptions options, const std::string& target) {
  if (!options.tokenizer.empty()) {
    options.tokenizer_origin = "--tokenizer";
  } else {
    options.tokenizer = target;
    options.tokenizer_origin = target.empty() ? "--tokenizer" : target;
  }
  return options;
}

std::size_t PromptSet::turns() const {
  std::size_t n = 0;
  for (const auto& p : prompts) n += p.turns();
  return n;
}

nlohmann::json rendering_json(const std::optional<PromptRendering>& r) {
  if (!r) return nullptr;
  return {{"tokenizer_sha256", r->tokenizer_sha256},
          {"template_sha256", r->template_sha256 ? nlohmann::json(*r->template_sha256) : nullptr},
          {"enable_thinking", r->enable_thinking ? nlohmann::json(*r->enable_thinking) : nullptr}};
}

namespace {

bool is_sha256(const nlohmann::json& v) {
  return v.is_string() && v.get<std::string>().size() == 64 &&
         v.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::optional<PromptRendering> rendering_from_json(const nlohmann::json& j, const std::string& file,
                                                   const std::string& where) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_object() || !j.contains("tokenizer_sha256") || !is_sha256(j["tokenizer_sha256"]))
    throw Error(file, where + " must be null or an object whose tokenizer_sha256 is a SHA-256");
  PromptRendering r;
  r.tokenizer_sha256 = j["tokenizer_sha256"].get<std::string>();
  const nlohmann::json t = j.value("template_sha256", nlohmann::json());
  if (!t.is_null() && !is_sha256(t))
    throw Error(file, where + ".template_sha256 must be a SHA-256 or null");
  if (!t.is_null()) r.template_sha256 = t.get<std::string>();
  const nlohmann::json thinking = j.value("enable_thinking", nlohmann::json());
  if (!thinking.is_null() && !thinking.is_boolean())
    throw Error(file, where + ".enable_thinking must be true, false or null");
  if (thinking.is_boolean()) r.enable_thinking = thinking.get<bool>();
  return r;
}

std::string describe_rendering(const std::optional<PromptRendering>& r) {
  if (!r) return "token ids as given";
  std::string s = "tokenizer " + r->tokenizer_sha256.substr(0, 12) + "…";
  if (!r->template_sha256) return s + ", no chat template";
  return s + ", template " + r->template_sha256->substr(0, 12) + "…, thinking " +
         (!r->enable_thinking   ? "the template's default"
          : *r->enable_thinking ? "on"
                                : "off");
}

namespace {

// A line's prompt before rendering: which input it gives, and that input.
struct Line {
  std::string where;  // path:line
  Prompt prompt;
  std::string text;  // the "text" input
  enum class Kind { kIds, kText, kMessages } kind = Kind::kIds;
};

// The roles apply_chat_template callers send; another is a typo the template would mis-render.
const std::set<std::string>& known_roles() {
  static const std::set<std::string> roles{"system", "user", "assistant", "tool"};
  return roles;
}

void check_conversation(const nlohmann::ordered_json& messages, const std::string& where) {
  chat_template::check_messages(messages, where + " (messages)");
  if (messages.empty()) throw Error(where, "\"messages\" is empty");
  for (std::size_t k = 0; k < messages.size(); ++k) {
    const std::string role = messages[k]["role"].get<std::string>();
    if (known_roles().count(role) == 0)
      throw Error(where, "messages/" + std::to_string(k) + "/role: unknown role \"" +
                             role.substr(0, 40) + "\" (expected system, user, assistant or tool)");
  }
  if (messages.back()["role"] == "assistant")
    throw Error(where, "the conversation ends with an assistant message: nothing to generate",
                "end it with the user turn whose reply is decoded");
}

Line parse_line(const std::string& text, const std::string& where) {
  if (const std::size_t bad = tokenizer::invalid_utf8_at(text); bad != std::string::npos)
    throw Error(where, "the line is not valid UTF-8 at byte " + std::to_string(bad + 1));
  const auto j = io::parse_json_strict(text, where);
  if (!j.is_object()) throw Error(where, "a prompt line must be a JSON object");
  Line line;
  line.where = where;
  Prompt& p = line.prompt;
  if (!j.contains("id")) throw Error(where, "missing \"id\" (a string)");
  if (!(j["id"].is_string() || j["id"].is_number_integer()))
    throw Error(where, "\"id\" is " + io::json_excerpt(j["id"]) +
                           ", not a string (or an integer, read as its digits)");
  p.id = j["id"].is_string() ? j["id"].get<std::string>()
                             : std::to_string(j["id"].get<std::int64_t>());
  if (p.id.empty()) throw Error(where, "empty \"id\"");
  const int inputs = j.contains("input_ids") + j.contains("text") + j.contains("messages");
  if (inputs != 1)
    throw Error(where,
                inputs == 0 ? "the line gives no prompt"
                            : "the line gives more than one of \"input_ids\", \"text\" and "
                              "\"messages\"",
                "give exactly one: token ids, a text tokenized as is, or a conversation rendered "
                "by the chat template (a label goes under another key)");
  if (j.contains("input_ids")) {
    if (!j["input_ids"].is_array() || j["input_ids"].empty())
      throw Error(where, "\"input_ids\" must be a non-empty array of token ids");
    for (const auto& t : j["input_ids"]) {
      if (!t.is_number_integer() || t.get<std::int64_t>() < 0)
        throw Error(where, "input_ids holds " + io::json_excerpt(t) +
                               ", not a non-negative integer token id");
      p.input_ids.push_back(t.get<std::int64_t>());
    }
  } else if (j.contains("text")) {
    if (!j["text"].is_string()) throw Error(where, "\"text\" must be a string");
    line.text = j["text"].get<std::string>();
    if (line.text.empty()) throw Error(where, "\"text\" is empty: nothing to decode from");
    line.kind = Line::Kind::kText;
  } else {
    // Reparsed ordered: the template sees each message's keys in the file's order.
    const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(text)["messages"];
    check_conversation(messages, where);
    const std::vector<nlohmann::ordered_json> turns = split_turns(messages);
    p.messages = turns.front();
    p.later_turns.assign(turns.begin() + 1, turns.end());
    line.kind = Line::Kind::kMessages;
  }
  return line;
}

// The ids of a text or messages line; a conversation's later turns are rendered once with empty
// replies, so a template or role problem is named here rather than after decoding has begun.
void render_line(Line& line, const PromptRenderer& renderer) {
  Prompt& p = line.prompt;
  if (line.kind == Line::Kind::kText) {
    p.input_ids = renderer.text_ids(line.text, line.where);
  } else if (line.kind == Line::Kind::kMessages) {
    p.input_ids = renderer.conversation_ids(p.messages, line.where);
    if (!p.later_turns.empty())
      renderer.conversation_ids(conversation_at(p, std::vector<std::string>(p.later_turns.size())),
                                line.where);
  } else {
    return;
  }
  if (p.input_ids.empty())
    throw Error(line.where, "the prompt tokenizes to no tokens: nothing to decode from");
}

PromptSet parse_prompt_set(const std::filesystem::path& path, const PromptOptions& options) {
  const std::string bytes = io::read_input_file(path, io::kMaxJsonBytes, "a JSONL prompt set");

  PromptSet set;
  set.path = path.string();
  set.file_sha256 = io::sha256_hex(bytes);
  std::vector<Line> lines;
  std::set<std::string> ids;
  bool any_text = false, any_messages = false;
  std::istringstream in(bytes);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back(parse_line(text, path.string() + ":" + std::to_string(number)));
    const Line& line = lines.back();
    if (!ids.insert(line.prompt.id).second)
      throw Error(line.where, "duplicate id \"" + line.prompt.id + "\"");
    any_text |= line.kind == Line::Kind::kText;
    any_messages |= line.kind == Line::Kind::kMessages;
  }
  if (lines.empty()) throw Error(path.string(), "prompt set is empty");
  // A setting nothing here would use is refused rather than ignored.
  if (!any_messages && (options.enable_thinking || !options.chat_template.empty()))
    throw Error(
        options.enable_thinking ? "--enable-thinking" : "--chat-template",
        "only \"messages\" prompts are rendered by a chat template, and " + set.path + " has none");
  if (any_text || any_messages) {
    set.renderer = std::make_shared<const PromptRenderer>(options, any_messages);
    set.rendering = set.renderer->rendering();
  }
  for (Line& line : lines) {
    if (set.renderer) render_line(line, *set.renderer);
    set.prompts.push_back(std::move(line.prompt));
  }
  set.sha256 = prompts_sha256(set.prompts);
  return set;
}

}  // namespace

PromptSet read_prompt_set(const std::filesystem::path& path, const std::string& origin,
                          const PromptOptions& options) {
  try {
    return parse_prompt_set(path, options);
  } catch (const Error& e) {
    throw Error(e.file(), e.problem() + " (the prompt set named by " + origin + ")", e.hint());
  }
}

}  // namespace draftgate::decode
