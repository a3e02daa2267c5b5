#pragma once
// Jinja2's lexer as transformers configures it (trim_blocks, lstrip_blocks, the default
// delimiters, keep_trailing_newline off): template text becomes data and tag tokens, with the
// whitespace control (`{%-`, `-%}`, `{%+`, trim and lstrip) already applied to the data, as
// jinja2/lexer.py's tokeniter does.

#include <string>
#include <vector>

namespace draftgate::chat_template {

struct Token {
  enum class Kind {
    kData,
    kVarBegin,
    kVarEnd,
    kBlockBegin,
    kBlockEnd,
    kName,
    kString,
    kInteger,
    kFloat,
    kOp,
    kEnd
  };
  Kind kind;
  std::string text;  // data, name, operator, or the decoded string literal
  int line;
};

// Throws TemplateError (kSyntax) naming the line.
std::vector<Token> lex(const std::string& source);

}  // namespace draftgate::chat_template
