// The public face of the template interpreter: parse, render with apply_chat_template's
// variables, find a checkpoint's template, read a messages file (see chat_template.h).

#include "draftgate/template/chat_template.h"

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/template/lexer.h"
#include "draftgate/template/parser.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::chat_template {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMaxTemplateBytes = 4u << 20;
constexpr std::uint64_t kMaxMessagesBytes = 64u << 20;

// "line N: problem" for the one stderr line, with what kind of failure it is.
Error to_error(const TemplateError& e, const std::string& file) {
  const std::string where = e.line > 0 ? "line " + std::to_string(e.line) + ": " : std::string();
  switch (e.kind) {
    case ErrorKind::kSyntax:
      return Error(file, where + "template syntax error: " + e.message);
    case ErrorKind::kUnsupported:
      return Error(file, where + "unsupported template construct: " + e.message,
                   "draftgate renders the subset of Jinja2 the Qwen3/3.5/3.6 chat templates use; "
                   "docs/prompts.md");
    case ErrorKind::kRender:
      return Error(file, where + "rendering failed: " + e.message);
    case ErrorKind::kRaised:
      return Error(file, where + "the template raised an exception: " + e.message);
    case ErrorKind::kBound:
      return Error(file, where + e.message);
  }
  return Error(file, where + e.message);
}

void require_utf8(const std::string& text, const std::string& file, const std::string& what) {
  const std::size_t bad = tokenizer::invalid_utf8_at(text);
  if (bad != std::string::npos)
    throw Error(file, what + " is not valid UTF-8 at byte " + std::to_string(bad));
}

}  // namespace

ChatTemplate ChatTemplate::parse(const std::string& source, const std::string& file) {
  require_utf8(source, file, "the chat template");
  ChatTemplate t;
  t.file_ = file;
  t.source_ = source;
  try {
    t.tpl_ = std::make_shared<const Template>(chat_template::parse(lex(source)));
  } catch (const TemplateError& e) {
    throw to_error(e, file);
  }
  return t;
}

std::string ChatTemplate::render(const RenderRequest& request, const RenderLimits& limits) const {
  check_messages(request.messages, file_ + " (messages)");
  try {
    Dict vars;
    if (request.variables.is_object())
      for (auto it = request.variables.begin(); it != request.variables.end(); ++it)
        vars.emplace_back(it.key(), from_json(it.value()));
    vars.emplace_back("messages", from_json(request.messages));
    vars.emplace_back("tools", from_json(request.tools));
    vars.emplace_back("documents", Value::none());
    vars.emplace_back("add_generation_prompt", Value::boolean(request.add_generation_prompt));
    if (request.enable_thinking)
      vars.emplace_back("enable_thinking", Value::boolean(*request.enable_thinking));
    return chat_template::render(*tpl_, vars, limits);
  } catch (const TemplateError& e) {
    throw to_error(e, file_);
  }
}

void check_messages(const nlohmann::ordered_json& messages, const std::string& file) {
  if (!messages.is_array())
    throw Error(file, "messages must be a JSON array of {\"role\", \"content\"} objects, got " +
                          std::string(messages.type_name()));
  for (std::size_t k = 0; k < messages.size(); ++k) {
    const auto& m = messages[k];
    const std::string where = "/" + std::to_string(k);
    if (!m.is_object())
      throw Error(file, where + ": a message must be an object with \"role\" and \"content\"");
    if (!m.contains("role") || !m["role"].is_string())
      throw Error(file, where + "/role: a message needs a string \"role\"");
    if (!m.contains("content"))
      throw Error(file,
                  where + ": a message needs \"content\" (a string, null, or a list of parts)");
    const auto& c = m["content"];
    if (!c.is_string() && !c.is_null() && !c.is_array())
      throw Error(file, where + "/content: must be a string, null, or a list of parts, got " +
                            std::string(c.type_name()));
  }
}

nlohmann::ordered_json read_messages(const std::string& path) {
  const std::string text = io::read_input_file(path, kMaxMessagesBytes, "a messages JSON");
  require_utf8(text, path, "the messages file");
  io::parse_json_strict(text, path, kMaxMessagesBytes);  // duplicates, depth, NUL: refused by name
  nlohmann::ordered_json messages =
      nlohmann::ordered_json::parse(text);  // keeps the file's key order
  check_messages(messages, path);
  return messages;
}

std::string render_generation_prompt(const CheckpointTemplate& t,
                                     const nlohmann::ordered_json& messages,
                                     std::optional<bool> enable_thinking) {
  RenderRequest request;
  request.messages = messages;
  request.add_generation_prompt = true;
  request.enable_thinking = enable_thinking;
  request.variables = t.special_tokens;
  return t.chat_template.render(request);
}

CheckpointTemplate load_checkpoint_template(const fs::path& path,
                                            const std::optional<fs::path>& override_file) {
  std::error_code ec;
  const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path();
  CheckpointTemplate out;
  const fs::path config = dir / "tokenizer_config.json";
  nlohmann::json cfg;
  if (fs::exists(config, ec)) {
    cfg = io::read_json_file(config);
    if (!cfg.is_object())
      throw Error(config.string(), "tokenizer_config.json must be a JSON object");
    // special_tokens_map: the named tokens that are set, as strings (an AddedToken object by its
    // content), and additional_special_tokens.
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                            "cls_token", "mask_token"}) {
      if (!cfg.contains(key) || cfg[key].is_null()) continue;
      const auto& v = cfg[key];
      std::string token;
      if (v.is_string())
        token = v.get<std::string>();
      else if (v.is_object() && v.contains("content") && v["content"].is_string())
        token = v["content"].get<std::string>();
      else
        throw Error(config.string(),
                    std::string("/") + key + ": must be a string or an object with \"content\"");
      // transformers' special_tokens_map keeps only the tokens that are set (`if attr_value`): an
      // empty one is undefined in the template.
      if (!token.empty()) out.special_tokens[key] = token;
    }
    if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& v : cfg["additional_special_tokens"]) {
        if (v.is_string())
          list.push_back(v.get<std::string>());
        else if (v.is_object() && v.contains("content") && v["content"].is_string())
          list.push_back(v["content"].get<std::string>());
        else
          throw Error(
              config.string(),
              "/additional_special_tokens: each must be a string or an object with \"content\"");
      }
      if (!list.empty()) out.special_tokens["additional_special_tokens"] = list;
    }
  }
  auto from_file = [](const fs::path& file) {
    return ChatTemplate::parse(io::read_input_file(file, kMaxTemplateBytes, "a chat template"),
                               file.string());
  };
  if (override_file) {
    out.chat_template = from_file(*override_file);
    return out;
  }
  const fs::path jinja = dir / "chat_template.jinja";
  if (fs::exists(jinja, ec)) {
    out.chat_template = from_file(jinja);
    return out;
  }
  if (cfg.is_null())
    throw Error(dir.string(),
                "no chat template: neither chat_template.jinja nor tokenizer_config.json is here",
                "give --chat-template FILE");
  if (!cfg.contains("chat_template") || cfg["chat_template"].is_null())
    throw Error(config.string(), "/chat_template: this tokenizer has no chat template",
                "give --chat-template FILE");
  const auto& ct = cfg["chat_template"];
  const std::string name = config.string() + " (chat_template)";
  if (ct.is_string()) {
    out.chat_template = ChatTemplate::parse(ct.get<std::string>(), name);
    return out;
  }
  if (ct.is_array()) {
    // transformers' named-template form: "default" is the one used without tools.
    for (std::size_t k = 0; k < ct.size(); ++k) {
      const auto& e = ct[k];
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
          !e.contains("template") || !e["template"].is_string())
        throw Error(config.string(), "/chat_template/" + std::to_string(k) +
                                         ": must be {\"name\": string, \"template\": string}");
    }
    // transformers makes a dict of the list: of two "default"s, the last is kept.
    for (auto it = ct.rbegin(); it != ct.rend(); ++it)
      if (const auto& e = *it; e["name"] == "default") {
        out.chat_template = ChatTemplate::parse(e["template"].get<std::string>(),
                                                config.string() + " (chat_template \"default\")");
        return out;
      }
    throw Error(config.string(), "/chat_template: several named templates and none is \"default\"",
                "give --chat-template FILE");
  }
  throw Error(config.string(),
              "/chat_template: must be a string or a list of {name, template}, got " +
                  std::string(ct.type_name()));
}

}  // namespace draftgate::chat_template
