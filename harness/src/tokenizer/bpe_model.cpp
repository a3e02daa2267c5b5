#include "draftgate/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "draftgate/io/json_util.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

using nlohmann::json;

// Ids index a table: past this the file is not a tokenizer draftgate can hold (Qwen's: 248,077).
constexpr std::int64_t kMaxId = 1 << 24;

std::optional<std::string> optional_string(const json& j, const std::string& key,
                                           const JsonPlace& at) {
  const json* v = at.find(j, key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string()) at.at(key).fail("must be a string or null, got " + io::json_excerpt(*v));
  return v->get<std::string>();
}

// A merge's two tokens: ["a", "b"], or the legacy "a b" (split at its one space).
std::pair<std::string, std::string> merge_pair(const json& m, const JsonPlace& at) {
  if (m.is_array()) {
    if (m.size() != 2 || !m[0].is_string() || !m[1].is_string())
      at.fail("a merge must be two strings, got " + io::json_excerpt(m));
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  }
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const auto space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
      at.fail("a legacy merge must be two tokens separated by one space, got " +
              io::json_excerpt(m));
    return {s.substr(0, space), s.substr(space + 1)};
  }
  at.fail("a merge must be [\"a\", \"b\"] or \"a b\", got " + io::json_excerpt(m));
}

}  // namespace

BpeModel BpeModel::from_json(const json& j, const JsonPlace& at) {
  BpeModel m;
  const json* dropout = at.find(j, "dropout");
  if (dropout != nullptr && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0))
    at.at("dropout").fail("BPE dropout " + io::json_excerpt(*dropout) +
                              " makes the ids random; draftgate needs a deterministic tokenizer",
                          "set it to null");
  m.unk_token_ = optional_string(j, "unk_token", at);
  m.prefix_ = optional_string(j, "continuing_subword_prefix", at);
  m.suffix_ = optional_string(j, "end_of_word_suffix", at);
  m.fuse_unk_ = at.bool_of(j, "fuse_unk", false);
  m.byte_fallback_ = at.bool_of(j, "byte_fallback", false);
  m.ignore_merges_ = at.bool_of(j, "ignore_merges", false);

  const json& vocab = at.require(j, "vocab");
  const JsonPlace vat = at.at("vocab");
  if (!vocab.is_object())
    vat.fail("must be an object of token: id, got " + io::json_excerpt(vocab));
  m.vocab_.reserve(vocab.size());
  std::int64_t max_id = -1;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= kMaxId)
      vat.at(token).fail("id must be an integer in 0…" + std::to_string(kMaxId - 1) + ", got " +
                         io::json_excerpt(id));
    m.vocab_.emplace(token, static_cast<std::int32_t>(id.get<std::int64_t>()));
    max_id = std::max(max_id, id.get<std::int64_t>());
  }
  m.by_id_.assign(static_cast<std::size_t>(max_id + 1), nullptr);
  for (const auto& [token, id] : m.vocab_) {
    const std::string*& slot = m.by_id_[static_cast<std::size_t>(id)];
    if (slot != nullptr)
      vat.fail("id " + std::to_string(id) + " belongs to two tokens, " + io::json_excerpt(*slot) +
               " and " + io::json_excerpt(token));
    slot = &token;
  }
  if (m.unk_token_ && !m.vocab_.count(*m.unk_token_))
    at.at("unk_token")
        .fail("unk_token " + io::json_excerpt(*m.unk_token_) + " is not in the vocabulary");

  const json& merges = at.require(j, "merges");
  const JsonPlace mat = at.at("merges");
  if (!merges.is_array()) mat.fail("must be an array, got " + io::json_excerpt(merges));
  m.merges_.reserve(merges.size());
  const std::size_t prefix_len = m.prefix_ ? m.prefix_->size() : 0;
  std::uint32_t rank = 0;
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const JsonPlace here = mat.at(i);
    // One form per file: the library reads the list as all pairs or all strings (MergeType).
    if (merges[i].is_array() != merges[0].is_array())
      here.fail("mixes [\"a\", \"b\"] pairs and \"a b\" strings (entry 0 is " +
                std::string(merges[0].is_array() ? "a pair" : "a string") +
                "); the library reads one form per file");
    if (merges[i].is_string() && merges[i].get<std::string>().rfind("#version", 0) == 0)
      continue;  // merges.txt's header line, skipped by the legacy reader
    const auto [a, b] = merge_pair(merges[i], here);
    const auto ia = m.vocab_.find(a), ib = m.vocab_.find(b);
    if (ia == m.vocab_.end())
      here.fail("merge token " + io::json_excerpt(a) + " is not in the vocabulary");
    if (ib == m.vocab_.end())
      here.fail("merge token " + io::json_excerpt(b) + " is not in the vocabulary");
    // The merged token drops b's continuing-subword prefix (model.rs, BpeBuilder::build).
    const std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : b);
    const auto im = m.vocab_.find(merged);
    if (im == m.vocab_.end())
      here.fail("merged token " + io::json_excerpt(merged) + " is not in the vocabulary");
    // A repeated pair keeps its last rank, as the library's map does.
    m.merges_[pair_key(ia->second, ib->second)] = Merge{rank, im->second};
    ++rank;
  }
  return m;
}

const BpeModel::Merge* BpeModel::merge_of(std::int32_t a, std::int32_t b) const {
  const auto it = merges_.find(pair_key(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

std::optional<std::int32_t> BpeModel::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= by_id_.size()) return nullptr;
  return by_id_[static_cast<std::size_t>(id)];
}

void BpeModel::tokenize(std::string_view piece, std::vector<std::int32_t>& ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const auto it = vocab_.find(std::string(piece));
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  // The word's symbols (model.rs, merge_word): one per character, unknown ones as byte tokens
  // or unk.
  struct Symbol {
    std::int32_t id;
    std::int64_t prev, next;
    bool removed;
  };
  std::vector<Symbol> symbols;
  const auto add = [&](std::int32_t id) {
    const auto n = static_cast<std::int64_t>(symbols.size());
    if (!symbols.empty()) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, false});
  };
  // The unknown token waiting to be emitted (fuse_unk merges a run of them); -1: none. Vocabulary
  // ids are non-negative (checked at load). A plain int, not an optional: GCC 12 warns falsely on
  // it.
  std::int32_t pending_unk = -1;
  std::string key;
  for (std::size_t pos = 0; pos < piece.size();) {
    std::size_t len = 0;
    decode_utf8(piece, pos, &len);
    const std::string_view ch = piece.substr(pos, len);
    const bool first = pos == 0, last = pos + len == piece.size();
    pos += len;
    key.assign(first || !prefix_ ? "" : *prefix_);
    key.append(ch);
    if (last && suffix_) key += *suffix_;
    const auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      if (pending_unk >= 0) add(pending_unk);
      pending_unk = -1;
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      std::vector<std::int32_t> bytes;
      for (const char b : key) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(b));
        const auto bt = vocab_.find(name);
        if (bt == vocab_.end()) break;
        bytes.push_back(bt->second);
      }
      if (bytes.size() == key.size()) {
        for (const std::int32_t b : bytes) add(b);
        continue;
      }
    }
    if (unk_token_) {
      const std::int32_t unk = vocab_.at(*unk_token_);
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = unk;
    }
  }
  if (pending_unk >= 0) add(pending_unk);

  // word.rs, merge_all: a min-heap on (rank, position); stale entries are skipped.
  struct Candidate {
    std::uint32_t rank;
    std::size_t pos;
    std::int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const Merge* mg = merge_of(symbols[i].id, symbols[i + 1].id))
      queue.push({mg->rank, i, mg->new_id});
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    const auto right_pos = static_cast<std::size_t>(left.next);
    const Merge* current = merge_of(left.id, symbols[right_pos].id);
    if (current == nullptr || current->new_id != top.new_id) continue;
    left.id = top.new_id;
    left.next = symbols[right_pos].next;
    symbols[right_pos].removed = true;
    if (left.next >= 0)
      symbols[static_cast<std::size_t>(left.next)].prev = static_cast<std::int64_t>(top.pos);
    if (left.prev >= 0) {
      const auto p = static_cast<std::size_t>(left.prev);
      if (const Merge* mg = merge_of(symbols[p].id, left.id)) queue.push({mg->rank, p, mg->new_id});
    }
    if (left.next >= 0) {
      if (const Merge* mg = merge_of(left.id, symbols[static_cast<std::size_t>(left.next)].id))
        queue.push({mg->rank, top.pos, mg->new_id});
    }
  }
  for (const Symbol& s : symbols)
    if (!s.removed) ids.push_back(s.id);
}

}  // namespace draftgate::tokenizer
