#include "draftgate/tokenizer/pre_tokenizer.h"

#include <utility>

#include "draftgate/io/json_util.h"
#include "draftgate/tokenizer/byte_level.h"
#include "draftgate/tokenizer/split_regex.h"

namespace draftgate::tokenizer {
namespace {

using nlohmann::json;
using Range = std::pair<std::size_t, std::size_t>;

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// The pieces of `text` around the matches of `regex` (NormalizedString::split with a Pattern).
std::vector<std::string> split_text(const std::string& text, const SplitRegex& regex,
                                    Behavior behavior, bool invert) {
  if (text.empty()) return {};
  // (range, is_match) covering the text (Pattern::find_matches, Invert flips the flags).
  std::vector<std::pair<Range, bool>> parts;
  std::size_t prev = 0;
  for (const auto& [start, end] : regex.find_all(text)) {
    if (prev != start) parts.push_back({{prev, start}, invert});
    parts.push_back({{start, end}, !invert});
    prev = end;
  }
  if (prev != text.size()) parts.push_back({{prev, text.size()}, invert});

  std::vector<Range> kept;  // the removed ones are not in it
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kIsolated:
      for (const auto& p : parts) kept.push_back(p.first);
      break;
    case Behavior::kRemoved:
      for (const auto& p : parts)
        if (!p.second) kept.push_back(p.first);
      break;
    case Behavior::kContiguous:
      for (const auto& [range, is_match] : parts) {
        if (is_match == previous_match && !kept.empty())
          kept.back().second = range.second;
        else
          kept.push_back(range);
        previous_match = is_match;
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const auto& [range, is_match] : parts) {
        if (is_match && !previous_match && !kept.empty())
          kept.back().second = range.second;
        else
          kept.push_back(range);
        previous_match = is_match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !previous_match && !kept.empty())
          kept.back().first = it->first.first;
        else
          kept.push_back(it->first);
        previous_match = it->second;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  std::vector<std::string> out;
  for (const auto& [start, end] : kept)
    if (end > start) out.push_back(text.substr(start, end - start));
  return out;
}

class Split : public PreTokenizer {
 public:
  Split(const std::string& pattern, SplitRegex::Syntax syntax, Behavior behavior, bool invert,
        const JsonPlace& at)
      : regex_(pattern, syntax, at), behavior_(behavior), invert_(invert) {}
  void apply(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    for (const auto& piece : pieces)
      for (auto& p : split_text(piece, regex_, behavior_, invert_)) out.push_back(std::move(p));
    pieces = std::move(out);
  }

 private:
  SplitRegex regex_;
  Behavior behavior_;
  bool invert_;
};

// GPT-2's pattern, which ByteLevel splits with when use_regex is true (byte_level.rs, RE).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const JsonPlace& at)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex)
      regex_ = std::make_unique<SplitRegex>(kGpt2Pattern, SplitRegex::Syntax::kRegex, at);
  }
  void apply(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    for (auto& piece : pieces) {
      if (piece.empty()) continue;
      if (add_prefix_space_ && piece[0] != ' ') piece.insert(0, 1, ' ');
      if (regex_ == nullptr) {
        out.push_back(bytes_to_alphabet(piece));
        continue;
      }
      for (const auto& p : split_text(piece, *regex_, Behavior::kIsolated, false))
        out.push_back(bytes_to_alphabet(p));
    }
    pieces = std::move(out);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<SplitRegex> regex_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<std::string>& pieces) const override {
    for (const auto& step : steps_) step->apply(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Behavior behavior_of(const json& j, const JsonPlace& at) {
  const std::string b = at.string_of(j, "behavior");
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  at.at("behavior")
      .fail("unknown split behavior \"" + b + "\"",
            "one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
            "Contiguous");
}

std::unique_ptr<PreTokenizer> split_from_json(const json& j, const JsonPlace& at) {
  const json& pattern = at.require(j, "pattern");
  const JsonPlace pat = at.at("pattern");
  if (!pattern.is_object() || pattern.size() != 1 ||
      !(pattern.contains("Regex") || pattern.contains("String")))
    pat.fail("must be {\"Regex\": …} or {\"String\": …}, got " + io::json_excerpt(pattern));
  const bool regex = pattern.contains("Regex");
  const std::string key = regex ? "Regex" : "String";
  return std::make_unique<Split>(pat.string_of(pattern, key),
                                 regex ? SplitRegex::Syntax::kRegex : SplitRegex::Syntax::kLiteral,
                                 behavior_of(j, at), at.flag_of(j, "invert"), pat.at(key));
}

}  // namespace

std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const json& j, const JsonPlace& at) {
  if (j.is_null()) return nullptr;
  const std::string type = at.type_of(j);
  if (type == "Split") return split_from_json(j, at);
  if (type == "ByteLevel") {
    // trim_offsets moves offsets only, not ids, but the library refuses a file without it.
    const ByteLevelFlags flags = byte_level_flags(j, at);
    return std::make_unique<ByteLevel>(flags.add_prefix_space, flags.use_regex, at);
  }
  if (type == "Sequence") {
    const auto& list = at.require(j, "pretokenizers");
    if (!list.is_array()) at.at("pretokenizers").fail("must be an array");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto step = pre_tokenizer_from_json(list[i], at.at("pretokenizers").at(i));
      if (step == nullptr) at.at("pretokenizers").at(i).fail("must be a pre-tokenizer, got null");
      steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  at.at("type").fail("pre-tokenizer type \"" + type + "\" is not supported",
                     "draftgate reads Split, ByteLevel and Sequence");
}

}  // namespace draftgate::tokenizer
