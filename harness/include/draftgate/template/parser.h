#pragma once
// Jinja2's grammar (jinja2/parser.py) for the statements and expressions draftgate renders. A
// statement, filter or test outside that subset is a TemplateError of kind kUnsupported naming
// the line, when the template is read, never a different rendering.

#include <vector>

#include "draftgate/template/ast.h"
#include "draftgate/template/lexer.h"

namespace draftgate::chat_template {

Template parse(const std::vector<Token>& tokens);

// The filters and tests the evaluator implements (the parser refuses others, as Jinja2 refuses
// an unknown one when it compiles).
bool known_filter(const std::string& name);
bool known_test(const std::string& name);

}  // namespace draftgate::chat_template
