#include "draftgate/tokenizer/split_regex.h"

#include <oniguruma.h>

#include <new>

#include "draftgate/tokenizer/unicode.h"

namespace draftgate::tokenizer {
namespace {

// Once per process, before the first pattern (onig_new would do it lazily, not thread-safely).
void initialise_oniguruma() {
  static const bool done = [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    return onig_initialize(encodings, 1) == ONIG_NORMAL;
  }();
  if (!done) throw std::bad_alloc();
}

std::string error_text(int code, OnigErrorInfo* info) {
  OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int length = info != nullptr ? onig_error_code_to_str(message, code, info)
                                     : onig_error_code_to_str(message, code);
  return std::string(reinterpret_cast<const char*>(message), static_cast<std::size_t>(length));
}

const OnigUChar* bytes(std::string_view s) { return reinterpret_cast<const OnigUChar*>(s.data()); }

}  // namespace

struct SplitRegex::Impl {
  OnigRegex regex = nullptr;
  ~Impl() {
    if (regex != nullptr) onig_free(regex);
  }
};

SplitRegex::SplitRegex(const std::string& pattern, Syntax syntax, const JsonPlace& at)
    : impl_(std::make_unique<Impl>()), at_(at) {
  initialise_oniguruma();
  OnigErrorInfo info{};
  // ONIG_SYNTAX_DEFAULT is what the onig crate's Regex::new compiles with; ASIS takes every byte
  // as itself, as regex::escape's output means.
  const int rc = onig_new(&impl_->regex, bytes(pattern), bytes(pattern) + pattern.size(),
                          ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                          syntax == Syntax::kRegex ? ONIG_SYNTAX_DEFAULT : ONIG_SYNTAX_ASIS, &info);
  if (rc != ONIG_NORMAL) {
    impl_->regex = nullptr;
    at.fail("regex does not compile: " + error_text(rc, &info));
  }
}

SplitRegex::~SplitRegex() = default;

std::vector<std::pair<std::size_t, std::size_t>> SplitRegex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> found;
  const std::unique_ptr<OnigRegion, void (*)(OnigRegion*)> region(
      onig_region_new(), [](OnigRegion* r) { onig_region_free(r, 1); });
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
        onig_search(impl_->regex, begin, end, begin + pos, end, region.get(), ONIG_OPTION_NONE);
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
