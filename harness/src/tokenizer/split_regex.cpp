#include "draftgate/tokenizer/split_regex.h"

#include <dlfcn.h>
#include <oniguruma.h>

#include <cctype>
#include <mutex>
#include <new>

#include "draftgate/error.h"
#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

// Oniguruma, opened with RTLD_LOCAL rather than linked: libonig also exports the POSIX regcomp /
// regexec / regfree, which, linked, replace glibc's in every library of the process (GoogleTest's
// regex matchers broke; a program linking draftgate's engine would see the same). Its header
// gives the types and constants; the functions and data come from the library opened here.
struct Oniguruma {
  decltype(&onig_initialize) initialize;
  decltype(&onig_new) compile;
  decltype(&onig_free) free;
  decltype(&onig_search) search;
  decltype(&onig_region_new) region_new;
  decltype(&onig_region_free) region_free;
  int (*error_to_str)(OnigUChar*, int, ...);
  std::string version;  // "6.9.8"
  OnigEncoding utf8;
  OnigSyntaxType* default_syntax;  // the onig crate's Regex::new syntax
  OnigSyntaxType* as_is;           // every byte itself

  static const Oniguruma& get() {
    static const Oniguruma library = open();
    return library;
  }

 private:
  static Oniguruma open() {
    constexpr const char* kSoname = "libonig.so.5";
    void* handle = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      throw Error(kSoname,
                  "cannot be loaded (" + std::string(why != nullptr ? why : "no reason given") +
                      "): the tokenizer matches tokenizer.json's regexes with Oniguruma, as the "
                      "Hugging Face library does",
                  "install Debian's libonig5 (ci/install-deps.sh does)");
    }
    const auto symbol = [&](const char* name) {
      void* p = ::dlsym(handle, name);
      if (p == nullptr) throw Error(kSoname, std::string("has no symbol ") + name);
      return p;
    };
    Oniguruma o{};
    o.initialize = reinterpret_cast<decltype(o.initialize)>(symbol("onig_initialize"));
    o.compile = reinterpret_cast<decltype(o.compile)>(symbol("onig_new"));
    o.free = reinterpret_cast<decltype(o.free)>(symbol("onig_free"));
    o.search = reinterpret_cast<decltype(o.search)>(symbol("onig_search"));
    o.region_new = reinterpret_cast<decltype(o.region_new)>(symbol("onig_region_new"));
    o.region_free = reinterpret_cast<decltype(o.region_free)>(symbol("onig_region_free"));
    o.error_to_str = reinterpret_cast<decltype(o.error_to_str)>(symbol("onig_error_code_to_str"));
    o.utf8 = static_cast<OnigEncoding>(symbol("OnigEncodingUTF8"));
    o.default_syntax = *static_cast<OnigSyntaxType**>(symbol("OnigDefaultSyntax"));
    o.as_is = static_cast<OnigSyntaxType*>(symbol("OnigSyntaxASIS"));
    o.version = reinterpret_cast<const char* (*)()>(symbol("onig_version"))();
    // Once, before the first pattern (onig_new would do it lazily, not thread-safely).
    OnigEncoding encodings[] = {o.utf8};
    if (o.initialize(encodings, 1) != ONIG_NORMAL)
      throw Error(kSoname, "Oniguruma " + o.version + " failed to initialise for UTF-8");
    return o;
  }
};

std::string error_text(int code, OnigErrorInfo* info) {
  OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
  const Oniguruma& onig = Oniguruma::get();
  const int length =
      info != nullptr ? onig.error_to_str(message, code, info) : onig.error_to_str(message, code);
  return std::string(reinterpret_cast<const char*>(message), static_cast<std::size_t>(length));
}

const OnigUChar* bytes(std::string_view s) { return reinterpret_cast<const OnigUChar*>(s.data()); }

// Constructs that Debian 12's Oniguruma (6.9.8) and the library's (the onig crate's copy) read
// differently, measured against the library through its npm binding: the POSIX bracket
// [:punct:] (the library's also holds symbols: $ + € ...) and the property Word (outside a class
// the library's holds ² ³ ¹ ½ ...; refused inside one too). Refused rather than matched
// otherwise; "" when none.
std::string differing_construct(const std::string& pattern) {
  for (const char* bracket : {"[:punct:]", "[:^punct:]"})
    if (pattern.find(bracket) != std::string::npos) return bracket;
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    const std::size_t close = pattern.find('}', i);
    if ((pattern[i + 1] == 'p' || pattern[i + 1] == 'P') && i + 2 < pattern.size() &&
        pattern[i + 2] == '{' && close != std::string::npos) {
      std::string name;  // as Oniguruma compares names: case, spaces, '_' and '-' ignored
      for (std::size_t k = i + 3; k < close; ++k)
        if (pattern[k] != ' ' && pattern[k] != '_' && pattern[k] != '-' && pattern[k] != '^')
          name += static_cast<char>(std::tolower(static_cast<unsigned char>(pattern[k])));
      if (name == "word") return pattern.substr(i, close - i + 1);
    }
    ++i;  // the escaped character
  }
  return "";
}

}  // namespace

struct SplitRegex::Impl {
  OnigRegex regex = nullptr;
  ~Impl() {
    if (regex != nullptr) Oniguruma::get().free(regex);
  }
};

SplitRegex::SplitRegex(const std::string& pattern, Syntax syntax, const JsonPlace& at)
    : impl_(std::make_unique<Impl>()), at_(at) {
  if (syntax == Syntax::kRegex)
    if (const std::string construct = differing_construct(pattern); !construct.empty())
      at.fail("regex construct " + construct + " means one thing to this machine's Oniguruma " +
                  Oniguruma::get().version +
                  " (Debian 12's 6.9.8 measured) and another to the Hugging Face library's copy of "
                  "it: refused rather than split otherwise",
              "\\p{P} (punctuation), \\p{S} (symbols) and \\w mean the same to both");
  const Oniguruma& onig = Oniguruma::get();
  OnigErrorInfo info{};
  // One compile at a time, as the onig crate's REGEX_NEW_MUTEX has them (searches run in
  // parallel). A literal as plain text: what regex::escape's output means.
  static std::mutex compiling;
  const std::lock_guard<std::mutex> lock(compiling);
  const int rc =
      onig.compile(&impl_->regex, bytes(pattern), bytes(pattern) + pattern.size(), ONIG_OPTION_NONE,
                   onig.utf8, syntax == Syntax::kRegex ? onig.default_syntax : onig.as_is, &info);
  if (rc != ONIG_NORMAL) {
    impl_->regex = nullptr;
    at.fail("regex does not compile: " + error_text(rc, &info));
  }
}

SplitRegex::~SplitRegex() = default;

std::vector<std::pair<std::size_t, std::size_t>> SplitRegex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> found;
  const Oniguruma& onig = Oniguruma::get();
  const auto free_region = [&onig](OnigRegion* r) { onig.region_free(r, 1); };
  const std::unique_ptr<OnigRegion, decltype(free_region)> region(onig.region_new(), free_region);
  if (region == nullptr) throw std::bad_alloc();
  const OnigUChar* begin = bytes(text);
  const OnigUChar* end = begin + text.size();
  // The iteration of the onig crate's FindMatches: an empty match moves the next search one
  // character on and is dropped when it touches the previous match's end. Empty matches count:
  // they split the text around them.
  std::size_t pos = 0;
  bool have_last = false;
  std::size_t last_end = 0;
  while (pos <= text.size()) {
    const int rc =
        onig.search(impl_->regex, begin, end, begin + pos, end, region.get(), ONIG_OPTION_NONE);
    if (rc == ONIG_MISMATCH) break;
    if (rc < 0)  // the library panics here ("Onig: Internal error during regex search")
      at_.fail("regex matching failed: " + error_text(rc, nullptr),
               "the text may need too much backtracking for this pattern");
    const auto start = static_cast<std::size_t>(region->beg[0]);
    const auto stop = static_cast<std::size_t>(region->end[0]);
    if (stop == start) {
      std::size_t len = 1;
      if (stop < text.size()) decode_utf8(text, stop, &len);
      pos = stop + len;
      if (have_last && last_end == stop) continue;
    } else {
      pos = stop;
    }
    found.emplace_back(start, stop);
    have_last = true;
    last_end = stop;
  }
  return found;
}

}  // namespace draftgate::tokenizer
