// Each part of the tokenizer against small cases worked out by hand from the Hugging Face
// library's rules (the files cited in harness/include/draftgate/tokenizer/*.h), on tokenizer.json
// files written here. The real tokenizers against the library itself: tokenizer_oracle_test.cpp.

#include "draftgate/tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <regex.h>

#include <nlohmann/json.hpp>

#include "draftgate/error.h"
#include "draftgate/tokenizer/byte_level.h"
#include "draftgate/tokenizer/pre_tokenizer.h"
#include "draftgate/tokenizer/split_regex.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const JsonPlace kAt{"test.json", ""};

// Qwen2/3's split pattern, as their tokenizer.json writes it.
const char* kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A tokenizer.json without pre-tokenizer: vocab and merges as given, plus `extra` members.
std::string tiny(const json& vocab, const json& merges, const json& extra = json::object()) {
  json j = {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", json::array()},
            {"normalizer", nullptr},
            {"pre_tokenizer", nullptr},
            {"post_processor", nullptr},
            {"decoder", nullptr},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"vocab", vocab},
              {"merges", merges}}}};
  for (const auto& [k, v] : extra.items()) j[k] = v;
  return j.dump();
}

std::vector<std::int32_t> encode(const std::string& tokenizer_json, const std::string& text) {
  return Tokenizer::from_text(tokenizer_json, "tiny.json").encode(text, "text");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.one_line();
  }
  return "(no error)";
}

TEST(TokenizerUnicode, LossyDecodingReplacesMaximalSubparts) {
  EXPECT_EQ(utf8_lossy("a\xC3"), "a\uFFFD");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98x"), "\uFFFDx");  // one truncated sequence, one U+FFFD
  EXPECT_EQ(utf8_lossy("\xE0\x80"), "\uFFFD\uFFFD");  // E0 80 starts nothing valid
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate's bytes
  EXPECT_EQ(utf8_lossy("\xC3\xA9"), "é");
  EXPECT_EQ(invalid_utf8_at("ab\xC0\xAF"), 2u);        // overlong
  EXPECT_EQ(invalid_utf8_at("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(invalid_utf8_at("héllo"), std::string::npos);
}

TEST(TokenizerUnicode, NormalFormsAndClasses) {
  EXPECT_EQ(normalize("e\u0301", NormalForm::kNFC), "é");
  EXPECT_EQ(normalize("é", NormalForm::kNFD), "e\u0301");
  EXPECT_EQ(normalize("\u212B", NormalForm::kNFC), "Å");  // a singleton decomposition
  EXPECT_EQ(normalize("ﬁ", NormalForm::kNFC), "ﬁ");       // compatibility only under NFKC
  EXPECT_EQ(normalize("ﬁ", NormalForm::kNFKC), "fi");
  EXPECT_EQ(normalize("a\u0301\u0316", NormalForm::kNFC), "á\u0316");  // reordered: ccc 220 < 230
  EXPECT_TRUE(is_white_space(0x85));
  EXPECT_FALSE(is_white_space(0x180E));  // Cf since Unicode 6.3
  EXPECT_TRUE(is_word_char(U'é'));
  EXPECT_TRUE(is_word_char(0x0301));
  EXPECT_FALSE(is_word_char(U'-'));
}

std::size_t matches(const char* pattern, std::string_view text,
                    SplitRegex::Syntax syntax = SplitRegex::Syntax::kRegex) {
  return SplitRegex(pattern, syntax, kAt).find_all(text).size();
}

// The library's engine, Oniguruma, matches: where PCRE2 (draftgate's engine before) read the same
// pattern differently — an outside tester's finds against the library through its npm binding —
// the meaning is Oniguruma's.
TEST(TokenizerRegex, ConstructsMeanWhatTheyMeanToTheLibrary) {
  EXPECT_EQ(matches(R"(\p{Han}+)", "中文、日本語"), 2u)
      << "、 is not Han (a script, not extensions)";
  EXPECT_EQ(matches(R"(\w+)", "abⅫcd Ⓐx"), 2u) << "Ⅻ (Nl) and Ⓐ (So, Alphabetic) are \\w";
  EXPECT_EQ(matches(R"(\w+)", "x²y"), 1u) << "² is \\w";
  EXPECT_EQ(matches("x(?i)y|z", "z"), 0u) << "(?i) reaches past '|': x(?i:y|z)";
  EXPECT_EQ(matches("x(?i)y|z", "xZ"), 1u);
  EXPECT_EQ(matches("a{,2}", "aaa"), 2u) << "{,2} is {0,2}";
  EXPECT_EQ(matches("(?i:ss)", "ß"), 1u) << "the multi-character case fold";
  EXPECT_EQ(matches(R"(\bword)", "a word sword"), 1u);
  EXPECT_EQ(matches(R"(\s+)", "a\u0085b"), 1u) << "U+0085 is white space";
  // A literal (Split's {"String": …}) is its text, metacharacters included.
  EXPECT_EQ(matches("a.b", "a.b axb", SplitRegex::Syntax::kLiteral), 1u);
  EXPECT_EQ(matches("(", "((", SplitRegex::Syntax::kLiteral), 2u);
  // What the engine refuses is refused, naming the place and its reason.
  EXPECT_THAT(error_of([] { matches("(a", ""); }),
              HasSubstr("test.json: /: regex does not compile: end pattern with unmatched "
                        "parenthesis"));
  EXPECT_THAT(error_of([] { matches(R"(\p{Nonsense})", ""); }),
              HasSubstr("regex does not compile: invalid character property name {Nonsense}"));
  // Read one way by Debian's Oniguruma 6.9.8 and another by the library's copy (measured through
  // its npm binding): refused, in any spelling of the name; an escaped backslash is no property.
  for (const char* differing : {"[[:punct:]]+", "[^[:^punct:]]", R"(\p{Word}+)", R"(\P{ w_O-rd })"})
    EXPECT_THAT(error_of([&] { matches(differing, ""); }),
                HasSubstr("(Debian 12's 6.9.8 measured) and another to the "
                          "Hugging Face library's copy of it"))
        << differing;
  EXPECT_EQ(matches(R"(\\p{Word})", "\\p{Word}"), 1u);
  // Catastrophic backtracking stops at the engine's retry limit (the library panics there).
  EXPECT_THAT(error_of([] { matches("(a+)+$", std::string(40, 'a') + "!"); }),
              HasSubstr("regex matching failed: retry-limit-in-match over"));
}

// Oniguruma's library also exports POSIX regcomp / regexec: linked, they replaced glibc's in the
// whole process. Opened locally, the process's POSIX regex stays glibc's.
TEST(TokenizerRegex, TheProcesssPosixRegexStaysGlibcs) {
  EXPECT_EQ(matches("a+", "aa"), 1u);  // the engine is loaded
  regex_t posix;
  ASSERT_EQ(::regcomp(&posix, "check +PASS", REG_EXTENDED | REG_NOSUB), 0);
  EXPECT_EQ(::regexec(&posix, "check    PASS", 0, nullptr, 0), 0);
  EXPECT_EQ(::regexec(&posix, "check FAIL", 0, nullptr, 0), REG_NOMATCH);
  ::regfree(&posix);
}

TEST(TokenizerRegex, EmptyMatchesSplitAndAdvanceOneCharacter) {
  // "x*" on "ab": empty at 0, empty at 1, empty at 2 (the onig/Rust iteration).
  const SplitRegex re("x*", SplitRegex::Syntax::kRegex, kAt);
  const auto m = re.find_all("ab");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1], std::make_pair(std::size_t{1}, std::size_t{1}));
  // After the non-empty "x" at 0, the empty match at 1 touches it and is dropped.
  const auto n = re.find_all("xa");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0], std::make_pair(std::size_t{0}, std::size_t{1}));
  EXPECT_EQ(n[1], std::make_pair(std::size_t{2}, std::size_t{2}));
}

std::vector<std::string> pre_tokenize(const json& j, std::string text) {
  auto p = pre_tokenizer_from_json(j, kAt);
  std::vector<std::string> pieces{std::move(text)};
  p->apply(pieces);
  return pieces;
}

TEST(TokenizerPreTokenizer, QwenSplitIsolatesWordsSpacesAndDigits) {
  const json split = {{"type", "Split"},
                      {"pattern", {{"Regex", kQwenPattern}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  // "  world": \s+(?!\S) backs off one space so " world" keeps its space.
  EXPECT_THAT(pre_tokenize(split, "Hello  world"), ElementsAre("Hello", " ", " world"));
  EXPECT_THAT(pre_tokenize(split, "x123"), ElementsAre("x", "1", "2", "3"));
  EXPECT_THAT(pre_tokenize(split, "I'M"), ElementsAre("I", "'M"));
  // Case folding as Oniguruma's: ſ is an s (the library: "'ſs" -> "'ſ", "s").
  EXPECT_THAT(pre_tokenize(split, "'ſs"), ElementsAre("'ſ", "s"));
  EXPECT_THAT(pre_tokenize(split, "'Ss"), ElementsAre("'S", "s"));
  EXPECT_THAT(pre_tokenize(split, "a.\n\nb"), ElementsAre("a", ".\n\n", "b"));
  // U+0085 is \s to Oniguruma (not to PCRE2's UCP \s): the library gives "a", NEL, NEL "b".
  EXPECT_THAT(pre_tokenize(split, "a\u0085\u0085b"), ElementsAre("a", "\u0085", "\u0085b"));
}

TEST(TokenizerPreTokenizer, SplitBehaviours) {
  const auto with = [](const char* behavior) {
    return json{{"type", "Split"},
                {"pattern", {{"String", "-"}}},
                {"behavior", behavior},
                {"invert", false}};
  };
  EXPECT_THAT(pre_tokenize(with("Removed"), "a-b--c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(pre_tokenize(with("Isolated"), "a-b"), ElementsAre("a", "-", "b"));
  EXPECT_THAT(pre_tokenize(with("MergedWithPrevious"), "a-b-"), ElementsAre("a-", "b-"));
  EXPECT_THAT(pre_tokenize(with("MergedWithNext"), "a-b-"), ElementsAre("a", "-b", "-"));
  EXPECT_THAT(pre_tokenize(with("Contiguous"), "a--b"), ElementsAre("a", "--", "b"));
}

TEST(TokenizerPreTokenizer, ByteLevelMapsBytesToTheAlphabet) {
  EXPECT_EQ(bytes_to_alphabet(" \n!"), "ĠĊ!");
  EXPECT_EQ(bytes_to_alphabet("é"), "Ã©");
  EXPECT_EQ(alphabet_byte(U'Ġ'), ' ');
  EXPECT_EQ(alphabet_byte(U'€'), -1);
  const json bl = {{"type", "ByteLevel"},
                   {"add_prefix_space", true},
                   {"trim_offsets", true},
                   {"use_regex", true}};
  EXPECT_THAT(pre_tokenize(bl, "Hi you"), ElementsAre("ĠHi", "Ġyou"));
}

TEST(TokenizerBpe, LowerRankMergesFirst) {
  const json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}};
  // (b,c) has rank 0, (a,b) rank 1: "abc" becomes a + bc, not ab + c.
  EXPECT_THAT(encode(tiny(vocab, json::array({{"b", "c"}, {"a", "b"}})), "abc"), ElementsAre(0, 4));
  EXPECT_THAT(encode(tiny(vocab, json::array({{"a", "b"}, {"b", "c"}})), "abc"), ElementsAre(3, 2));
  // The legacy "a b" form means the same.
  EXPECT_THAT(encode(tiny(vocab, json::array({"b c", "a b"})), "abc"), ElementsAre(0, 4));
}

TEST(TokenizerBpe, EqualRanksMergeLeftmostFirst) {
  const json vocab = {{"a", 0}, {"aa", 1}};
  EXPECT_THAT(encode(tiny(vocab, json::array({{"a", "a"}})), "aaa"), ElementsAre(1, 0));
  EXPECT_THAT(encode(tiny(vocab, json::array({{"a", "a"}})), "aaaa"), ElementsAre(1, 1));
}

TEST(TokenizerBpe, ByteFallbackAndUnknowns) {
  json vocab = {{"<unk>", 0}, {"a", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}};
  std::string t = tiny(vocab, json::array());
  json j = json::parse(t);
  j["model"]["byte_fallback"] = true;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "ByteFallback"}}, {{"type", "Fuse"}}})}};
  const Tokenizer bf = Tokenizer::from_text(j.dump(), "bf.json");
  EXPECT_THAT(bf.encode("aé", "text"), ElementsAre(1, 2, 3));
  EXPECT_EQ(bf.decode({1, 2, 3}, false), "aé");
  EXPECT_EQ(bf.decode({2, 1}, false), "\uFFFDa");  // a lone lead byte
  j["model"]["byte_fallback"] = false;
  j["model"]["unk_token"] = "<unk>";
  EXPECT_THAT(Tokenizer::from_text(j.dump(), "u.json").encode("éèa", "t"), ElementsAre(0, 0, 1));
  j["model"]["fuse_unk"] = true;
  EXPECT_THAT(Tokenizer::from_text(j.dump(), "u.json").encode("éèa", "t"), ElementsAre(0, 1));
}

json added(const std::string& content, int id, bool normalized, json flags = json::object()) {
  json t = {{"id", id},        {"content", content}, {"single_word", false},
            {"lstrip", false}, {"rstrip", false},    {"normalized", normalized},
            {"special", true}};
  for (const auto& [k, v] : flags.items()) t[k] = v;
  return t;
}

// A character-level tokenizer over `chars` (ids 0…) with NFC and the added tokens.
std::string with_added(const std::string& chars, const json& tokens) {
  json vocab = json::object();
  int id = 0;
  for (std::size_t pos = 0; pos < chars.size();) {
    std::size_t len = 0;
    decode_utf8(chars, pos, &len);
    vocab[chars.substr(pos, len)] = id++;
    pos += len;
  }
  return tiny(vocab, json::array(), {{"added_tokens", tokens}, {"normalizer", {{"type", "NFC"}}}});
}

TEST(TokenizerAddedTokens, RawTokensMatchBeforeNormalizationNormalizedOnesAfter) {
  // Characters a=0 b=1 é=2 U+0301=3 e=4; the added token "bé" gets id 5.
  const std::string raw = with_added("abé\u0301e", json::array({added("bé", 5, false)}));
  EXPECT_THAT(encode(raw, "abé"), ElementsAre(0, 5));
  EXPECT_THAT(encode(raw, "abe\u0301"), ElementsAre(0, 1, 2)) << "NFD é: not the raw token";
  const std::string normalized = with_added("abé\u0301e", json::array({added("bé", 5, true)}));
  EXPECT_THAT(encode(normalized, "abe\u0301"), ElementsAre(0, 5));
}

TEST(TokenizerAddedTokens, LongestLeftmostAndFlags) {
  const std::string t = with_added(
      "ab <>x", json::array({added("<x>", 6, false), added("<x><x>", 7, false),
                             added("ab", 8, false, {{"single_word", true}}),
                             added("<<", 9, false, {{"lstrip", true}, {"rstrip", true}})}));
  EXPECT_THAT(encode(t, "<x><x><x>"), ElementsAre(7, 6));
  EXPECT_THAT(encode(t, "ab a"), ElementsAre(8, 2, 0));
  EXPECT_THAT(encode(t, "aab"), ElementsAre(0, 0, 1)) << "single_word: ab inside a word";
  EXPECT_THAT(encode(t, "a  <<  b"), ElementsAre(0, 9, 1)) << "lstrip and rstrip take the spaces";
  EXPECT_THAT(encode(t, "<x"), ElementsAre(3, 5)) << "a partial token is text";
}

TEST(TokenizerAddedTokens, DecodeSkipsSpecialTokensOnRequest) {
  json tokens = json::array({added("<s>", 2, false)});
  tokens[0]["special"] = true;
  const Tokenizer t = Tokenizer::from_text(with_added("ab", tokens), "t.json");
  EXPECT_EQ(t.decode({0, 2, 1}, false), "a <s> b");  // no decoder: joined with spaces
  EXPECT_EQ(t.decode({0, 2, 1}, true), "a b");
}

TEST(TokenizerByteLevel, RoundTripsThroughTheAlphabet) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_alphabet(std::string(1, static_cast<char>(b)))] = b;
  vocab["Ġh"] = 256;
  const json bl = {{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", false},
                   {"use_regex", false}};
  const std::string j =
      tiny(vocab, json::array({{"Ġ", "h"}}), {{"pre_tokenizer", bl}, {"decoder", bl}});
  const Tokenizer t = Tokenizer::from_text(j, "bl.json");
  const auto ids = t.encode(" hé", "text");
  EXPECT_THAT(ids, ElementsAre(256, 0xC3, 0xA9));
  EXPECT_EQ(t.decode(ids, false), " hé");
  EXPECT_EQ(t.decode({0xC3}, false), "\uFFFD");
}

TEST(TokenizerErrors, NameTheFileAndThePlace) {
  const json vocab = {{"a", 0}, {"b", 1}};
  EXPECT_THAT(error_of([&] {
                encode(tiny(vocab, json::array({{"a", "c"}})), "a");
              }),
              HasSubstr("tiny.json: /model/merges/0: merge token \"c\" is not in the vocabulary"));
  EXPECT_THAT(error_of([&] {
                encode(tiny(vocab, json::array({{"a", "b"}})), "a");
              }),
              HasSubstr("/model/merges/0: merged token \"ab\" is not in the vocabulary"));
  EXPECT_THAT(error_of([&] {
                encode(tiny({{"a", 0}, {"b", 0}}, json::array()), "a");
              }),
              HasSubstr("/model/vocab: id 0 belongs to two tokens"));
  EXPECT_THAT(
      error_of([&] {
        encode(tiny(vocab, json::array(), {{"pre_tokenizer", {{"type", "Metaspace"}}}}), "a");
      }),
      HasSubstr("/pre_tokenizer/type: pre-tokenizer type \"Metaspace\" is not supported"));
  EXPECT_THAT(error_of([&] {
                encode(tiny(vocab, json::array(), {{"normalizer", {{"type", "Lowercase"}}}}), "a");
              }),
              HasSubstr("/normalizer/type: normalizer type \"Lowercase\" is not supported"));
  EXPECT_THAT(error_of([&] { encode(tiny(vocab, json::array()), "a\xFF"); }),
              HasSubstr("text: text is not valid UTF-8 at byte 1"));
  EXPECT_THAT(error_of([&] { encode("{\"model\": ", "a"); }), HasSubstr("tiny.json:"));
  EXPECT_THAT(
      error_of([&] { encode(with_added("ab", json::array({added("<s>", 5, false)})), "a"); }),
      HasSubstr("/added_tokens/0/id: added token \"<s>\" declares id 5 but the Hugging "
                "Face library gives it id 2"));
}

// Fields the library's serde structs require are refused when absent or null, as the library
// refuses the whole file (TokenizerOracle.FilesTheLibraryRefusesAreRefused runs it on the same).
TEST(TokenizerErrors, FieldsTheLibraryRequiresAreRequired) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[bytes_to_alphabet(std::string(1, static_cast<char>(b)))] = b;
  vocab["ab"] = 256;
  const json bl = {{"type", "ByteLevel"},
                   {"add_prefix_space", false},
                   {"trim_offsets", false},
                   {"use_regex", false}};
  const json whole = json::parse(tiny(vocab, json::array({{"a", "b"}}),
                                      {{"pre_tokenizer", bl},
                                       {"decoder", bl},
                                       {"post_processor", bl},
                                       {"added_tokens", json::array({added("<s>", 257, false)})}}));
  EXPECT_THAT(encode(whole.dump(), "ab"), ElementsAre(256));
  const auto refusal = [&](const std::function<void(json&)>& change) {
    json j = whole;
    change(j);
    return error_of([&] { encode(j.dump(), "ab"); });
  };
  for (const char* flag : {"single_word", "lstrip", "rstrip", "normalized", "special"}) {
    EXPECT_THAT(refusal([&](json& j) { j["added_tokens"][0].erase(flag); }),
                HasSubstr(std::string("/added_tokens/0: has no \"") + flag + "\""));
    EXPECT_THAT(refusal([&](json& j) { j["added_tokens"][0][flag] = nullptr; }),
                HasSubstr(std::string("/added_tokens/0/") + flag + ": must be true or false"));
  }
  for (const char* part : {"pre_tokenizer", "decoder", "post_processor"})
    for (const char* flag : {"add_prefix_space", "trim_offsets"}) {
      EXPECT_THAT(refusal([&](json& j) { j[part].erase(flag); }),
                  HasSubstr(std::string("/") + part + ": has no \"" + flag + "\""));
      EXPECT_THAT(refusal([&](json& j) { j[part][flag] = nullptr; }),
                  HasSubstr(std::string("/") + part + "/" + flag + ": must be true or false"));
    }
  EXPECT_THAT(encode(
                  [&] {
                    json j = whole;
                    for (const char* part : {"pre_tokenizer", "decoder", "post_processor"})
                      j[part].erase("use_regex");  // the one ByteLevel flag with a default (true)
                    j["model"]["fuse_unk"] = nullptr;  // BPE's options read null as unset
                    return j.dump();
                  }(),
                  "ab"),
              ElementsAre(256));
  EXPECT_THAT(refusal([](json& j) {
                j["model"]["merges"] = json::array({{"a", "b"}, "a b"});
              }),
              HasSubstr("/model/merges/1: mixes [\"a\", \"b\"] pairs and \"a b\" strings"));
  EXPECT_THAT(refusal([](json& j) {
                j["pre_tokenizer"] = {{"type", "Split"},
                                      {"pattern", {{"String", " "}}},
                                      {"behavior", "Isolated"},
                                      {"invert", nullptr}};
              }),
              HasSubstr("/pre_tokenizer/invert: must be true or false, got null"));
}

}  // namespace
}  // namespace draftgate::tokenizer
