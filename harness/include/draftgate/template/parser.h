#pragma once
// Jinja2's grammar (jinja2/parser.py) for the statements and expressions draftgate renders. A
// statement, filter or test outside that subset is a TemplateError of kind kUnsupported naming
// the line, when the template is read, never a different rendering. The parsed template: its
// expressions and statements.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "draftgate/template/lexer.h"
#include "draftgate/template/value.h"

namespace draftgate::chat_template {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using KwArgs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    kLiteral,
    kName,
    kList,
    kTuple,
    kDict,
    kGetattr,
    kGetitem,
    kSlice,
    kCall,
    kFilter,
    kTest,
    kNeg,
    kPos,
    kNot,
    kBinary,
    kCompare,
    kAnd,
    kOr,
    kCond,
    kConcat
  };
  Kind kind;
  int line = 0;
  Value literal;                 // kLiteral
  std::string name;              // kName, attribute, filter/test name, binary operator
  std::vector<ExprPtr> args;     // operands, items, call/filter arguments (the subject first)
  KwArgs kwargs;                 // keyword arguments of calls, filters and tests
  std::vector<std::string> ops;  // kCompare: the operators between args
  bool negated = false;          // kTest: `is not`
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind { kData, kOutput, kIf, kFor, kSet, kMacro, kBreak, kContinue, kBlock };
  Kind kind;
  int line = 0;
  std::string text;  // kData; kSet: the namespace attribute (empty: a name); kMacro: name
  ExprPtr expr;      // kOutput; kFor: the iterable; kSet: the value
  std::vector<std::string> targets;                // kFor: loop variables; kSet: the name
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf: (condition, body) for if and each elif
  Body body;                                       // kFor, kMacro, kBlock; kIf: the else branch
  Body else_body;                                  // kFor: the else branch
  ExprPtr filter;                                  // kFor: `if` condition
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro: parameters and defaults
};

struct Template {
  Body body;
};

Template parse(const std::vector<Token>& tokens);

// The filters and tests the evaluator implements (the parser refuses others, as Jinja2 refuses
// an unknown one when it compiles).
bool known_filter(const std::string& name);
bool known_test(const std::string& name);

}  // namespace draftgate::chat_template
