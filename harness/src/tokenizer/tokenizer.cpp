#include "draftgate/tokenizer/tokenizer.h"

#include <sys/stat.h>

#include "draftgate/error.h"
#include "draftgate/io/input_file.h"
#include "draftgate/io/json_util.h"
#include "draftgate/tokenizer/byte_level.h"
#include "draftgate/tokenizer/decoder.h"
#include "draftgate/tokenizer/normalizer.h"
#include "draftgate/tokenizer/pre_tokenizer.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The real files are 7–12 MB; a 256 MB one is not a tokenizer.
constexpr std::uint64_t kMaxTokenizerBytes = 256ull << 20;

constexpr const char* kMembers[] = {"version",      "truncation",     "padding",
                                    "added_tokens", "normalizer",     "pre_tokenizer",
                                    "model",        "post_processor", "decoder"};

// A post-processor that adds no tokens to a single sequence (the library's ByteLevel one only
// trims offsets); others are refused.
void check_post_processor(const json& j, const JsonPlace& at) {
  if (j.is_null()) return;
  const std::string type = at.type_of(j);
  if (type == "ByteLevel") {
    byte_level_flags(j, at);  // the library refuses the file without its flags
    return;
  }
  at.at("type").fail("post-processor type \"" + type + "\" is not supported",
                     "draftgate reads tokenizers whose post-processor adds no tokens (null or "
                     "ByteLevel)");
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const fs::path& path) {
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? path / "tokenizer.json" : path;
  return from_text(io::read_input_file(file, kMaxTokenizerBytes, "tokenizer.json"), file.string());
}

Tokenizer Tokenizer::from_text(std::string_view text, const std::string& file) {
  const JsonPlace root{file, ""};
  // The library's JSON reader stops at a byte order mark, which nlohmann's skips.
  if (text.substr(0, 3) == "\xEF\xBB\xBF")
    root.fail("starts with a UTF-8 byte order mark, which the Hugging Face library refuses",
              "save the file without one");
  const json j = io::parse_json_strict(text, file, kMaxTokenizerBytes);
  if (!j.is_object()) root.fail("must be a tokenizer.json object, got " + io::json_excerpt(j));
  // The library's reader (serialization.rs) stops at any other member.
  for (const auto& [key, value] : j.items())
    if (std::find(std::begin(kMembers), std::end(kMembers), key) == std::end(kMembers))
      root.fail("has a member \"" + key.substr(0, 40) + "\" the Hugging Face library refuses",
                "a tokenizer.json holds version, truncation, padding, added_tokens, normalizer, "
                "pre_tokenizer, model, post_processor and decoder");
  Tokenizer t;
  t.file_ = file;
  if (const json* v = root.find(j, "version"); v != nullptr && *v != "1.0")
    root.at("version").fail("tokenizer.json version " + io::json_excerpt(*v) +
                            " is unknown (the library reads \"1.0\")");
  for (const char* key : {"truncation", "padding"})
    if (const json* v = root.find(j, key); v != nullptr && !v->is_null())
      root.at(key).fail(std::string(key) + " is set; draftgate tokenizes prompts whole",
                        "set it to null");
  const json& model = root.require(j, "model");
  const JsonPlace mat = root.at("model");
  // The library reads a model without "type" as BPE when it has vocab and merges.
  const json* type = mat.find(model, "type");
  if (type != nullptr && *type != "BPE")
    mat.at("type").fail("model type " + io::json_excerpt(*type) + " is not supported",
                        "draftgate reads BPE models (Qwen, Llama 3, GPT-2 style)");
  t.model_ = BpeModel::from_json(model, mat);
  const json null;
  const auto member = [&](const char* key) -> const json& {
    const json* v = root.find(j, key);
    return v == nullptr ? null : *v;
  };
  t.normalizer_ = normalizer_from_json(member("normalizer"), root.at("normalizer"));
  t.pre_tokenizer_ = pre_tokenizer_from_json(member("pre_tokenizer"), root.at("pre_tokenizer"));
  check_post_processor(member("post_processor"), root.at("post_processor"));
  t.decoder_ = decoder_from_json(member("decoder"), root.at("decoder"));
  // Absent: none; null is refused, as the library refuses it (it reads a sequence).
  const json* added = root.find(j, "added_tokens");
  t.added_ = AddedVocabulary::from_json(added != nullptr ? *added : json::array(),
                                        root.at("added_tokens"), t.model_, t.normalizer_.get());
  return t;
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text,
                                            const std::string& source) const {
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string::npos)
    throw Error(source, "text is not valid UTF-8 at byte " + std::to_string(bad),
                "tokenizers read Unicode text; re-encode the input as UTF-8");
  std::vector<std::int32_t> ids;
  for (const Segment& seg : added_.extract_and_normalize(text, normalizer_.get())) {
    if (seg.id) {
      ids.push_back(*seg.id);
      continue;
    }
    std::vector<std::string> pieces{seg.text};
    if (pre_tokenizer_) pre_tokenizer_->apply(pieces);
    for (const std::string& p : pieces) model_.tokenize(p, ids);
  }
  return ids;
}

std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text) const {
  std::vector<std::string> pieces{std::string(text)};
  if (pre_tokenizer_) pre_tokenizer_->apply(pieces);
  return pieces;
}

std::string Tokenizer::id_to_token(std::int32_t id) const {
  if (const std::string* c = added_.decoded_content(id)) return *c;
  if (const std::string* t = model_.id_to_token(id)) return *t;
  throw Error(file_, "no token has id " + std::to_string(id));
}

bool Tokenizer::has_id(std::int32_t id) const {
  return added_.decoded_content(id) != nullptr || model_.id_to_token(id) != nullptr;
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids,
                              bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const std::int32_t id : ids) {
    // tokenizer/mod.rs, decode: special means "a special added token's content".
    if (skip_special_tokens) {
      const std::string token = id_to_token(id);
      bool special = false;
      for (const AddedToken& a : added_.tokens()) special |= a.special && a.content == token;
      if (special) continue;
      tokens.push_back(token);
      continue;
    }
    tokens.push_back(id_to_token(id));
  }
  if (!decoder_) {
    std::string s;
    for (std::size_t i = 0; i < tokens.size(); ++i) s += (i ? " " : "") + tokens[i];
    return s;
  }
  std::string s;
  for (const auto& piece : decoder_->decode_chain(std::move(tokens))) s += piece;
  return s;
}

}  // namespace draftgate::tokenizer
