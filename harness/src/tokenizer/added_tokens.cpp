#include "draftgate/tokenizer/added_tokens.h"

#include <algorithm>
#include <map>

#include "draftgate/io/json_util.h"
#include "draftgate/tokenizer/bpe_model.h"
#include "draftgate/tokenizer/normalizer.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

using nlohmann::json;

// The last code point before byte `end` of valid UTF-8 `s`.
char32_t last_char(std::string_view s, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  std::size_t len = 0;
  return decode_utf8(s, start, &len);
}

// Where the whitespace run ending at `end` starts (LEFTMOST_SPACE_AT_END, `\s*$`).
std::size_t whitespace_start_before(std::string_view s, std::size_t end) {
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    std::size_t len = 0;
    if (!is_white_space(decode_utf8(s, start, &len))) break;
    end = start;
  }
  return end;
}

// Where the whitespace run starting at `pos` ends (RIGHTMOST_SPACE_AT_START, `^\s*`).
std::size_t whitespace_end_after(std::string_view s, std::size_t pos) {
  while (pos < s.size()) {
    std::size_t len = 0;
    if (!is_white_space(decode_utf8(s, pos, &len))) break;
    pos += len;
  }
  return pos;
}

}  // namespace

AddedVocabulary AddedVocabulary::from_json(const json& j, const JsonPlace& at,
                                           const BpeModel& model, const Normalizer* normalizer) {
  AddedVocabulary v;
  if (!j.is_array()) at.fail("must be an array, got " + io::json_excerpt(j));
  std::map<std::string, std::size_t> seen;
  // added_vocabulary.rs, add_tokens: new ids start after the model's vocabulary.
  std::int64_t next_id = static_cast<std::int64_t>(model.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    const JsonPlace here = at.at(i);
    const json& t = j[i];
    AddedToken tok;
    tok.content = here.string_of(t, "content");
    if (tok.content.empty()) here.at("content").fail("an added token's content is empty");
    if (invalid_utf8_at(tok.content) != std::string::npos)
      here.at("content").fail("is not valid UTF-8");
    if (seen.count(tok.content))
      here.at("content").fail("added token " + io::json_excerpt(tok.content) + " repeats entry " +
                              std::to_string(seen[tok.content]));
    seen[tok.content] = i;
    const json& id = here.require(t, "id");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT32_MAX)
      here.at("id").fail("must be a non-negative 32-bit integer, got " + io::json_excerpt(id));
    // Every flag is required (AddedToken derives Deserialize without defaults).
    tok.single_word = here.flag_of(t, "single_word");
    tok.lstrip = here.flag_of(t, "lstrip");
    tok.rstrip = here.flag_of(t, "rstrip");
    tok.normalized = here.flag_of(t, "normalized");
    tok.special = here.flag_of(t, "special");
    const auto in_model = model.token_to_id(tok.content);
    const std::int64_t assigned = in_model ? *in_model : next_id++;
    if (assigned != id.get<std::int64_t>())
      here.at("id").fail("added token " + io::json_excerpt(tok.content) + " declares id " +
                             std::to_string(id.get<std::int64_t>()) +
                             " but the Hugging Face library "
                             "gives it id " +
                             std::to_string(assigned),
                         "the file's ids are inconsistent with its vocabulary");
    tok.id = static_cast<std::int32_t>(assigned);
    v.match_content_.push_back(
        tok.normalized && normalizer != nullptr ? normalizer->normalize(tok.content) : tok.content);
    (tok.normalized ? v.normalized_set_ : v.raw_set_).push_back(v.tokens_.size());
    v.tokens_.push_back(std::move(tok));
  }
  return v;
}

const AddedToken* AddedVocabulary::find(std::int32_t id) const {
  for (const auto& t : tokens_)
    if (t.id == id) return &t;
  return nullptr;
}

const std::string* AddedVocabulary::decoded_content(std::int32_t id) const {
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    if (tokens_[i].id == id) return &match_content_[i];
  return nullptr;
}

std::vector<Segment> AddedVocabulary::split(std::string_view text,
                                            const std::vector<std::size_t>& set) const {
  if (set.empty() || text.empty()) return {Segment{std::string(text), std::nullopt}};
  // Leftmost-longest, non-overlapping matches (daachorse's MatchKind::LeftmostLongest): at each
  // position the longest content starting there; the search resumes after it.
  struct Match {
    std::size_t start, end, token;
  };
  std::vector<Match> matches;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t best = SIZE_MAX, best_len = 0;
    for (const std::size_t t : set) {
      const std::string& c = match_content_[t];
      if (c.size() > best_len && text.compare(pos, c.size(), c) == 0) {
        best = t;
        best_len = c.size();
      }
    }
    if (best == SIZE_MAX) {
      ++pos;
      continue;
    }
    matches.push_back({pos, pos + best_len, best});
    pos += best_len;
  }
  // find_matches: single_word, lstrip and rstrip, with the offsets the library computes.
  std::vector<Segment> out;
  std::size_t offset = 0;
  for (const Match& m : matches) {
    const AddedToken& tok = tokens_[m.token];
    std::size_t start = m.start, stop = m.end;
    if (tok.single_word) {
      const bool space_before = start == 0 || !is_word_char(last_char(text, start));
      std::size_t len = 0;
      const bool space_after = stop == text.size() || !is_word_char(decode_utf8(text, stop, &len));
      if (!space_before || !space_after) continue;
    }
    if (tok.lstrip) start = std::max(whitespace_start_before(text, start), offset);
    if (tok.rstrip) stop = whitespace_end_after(text, stop);
    if (offset < start)
      out.push_back({std::string(text.substr(offset, start - offset)), std::nullopt});
    out.push_back({std::string(text.substr(start, stop - start)), tok.id});
    offset = stop;
  }
  if (offset != text.size()) out.push_back({std::string(text.substr(offset)), std::nullopt});
  return out;
}

std::vector<Segment> AddedVocabulary::extract_and_normalize(std::string_view text,
                                                            const Normalizer* normalizer) const {
  std::vector<Segment> out;
  for (Segment& raw : split(text, raw_set_)) {
    if (raw.id) {
      out.push_back(std::move(raw));
      continue;
    }
    const std::string normalized = normalizer ? normalizer->normalize(raw.text) : raw.text;
    for (Segment& s : split(normalized, normalized_set_))
      if (s.id || !s.text.empty()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace draftgate::tokenizer
