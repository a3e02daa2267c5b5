// Jinja2's parser (jinja2/parser.py, 3.1): the same precedence and the same end rules, for the
// statements a chat template uses. Everything else is refused by name and line.

#include "draftgate/template/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

namespace draftgate::chat_template {

bool known_filter(const std::string& name) {
  static const std::set<std::string> kFilters = {
      "length", "count", "trim",  "tojson", "items",   "safe", "string",  "list", "first",
      "last",   "join",  "upper", "lower",  "default", "d",    "reverse", "abs"};
  return kFilters.count(name) > 0;
}

bool known_test(const std::string& name) {
  static const std::set<std::string> kTests = {
      "defined", "undefined", "none",    "string", "mapping", "iterable", "sequence", "number",
      "integer", "float",     "boolean", "true",   "false",   "odd",      "even"};
  return kTests.count(name) > 0;
}

namespace {

using K = Token::Kind;

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// The end tags of the blocks the parser knows.
bool is_block_end(const std::string& name) {
  for (const char* end : {"endif", "endfor", "endmacro", "endcall", "endfilter", "endset",
                          "endgeneration", "endraw", "endblock", "endwith"})
    if (name == end) return true;
  return false;
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Template run() {
    Template tpl;
    tpl.body = subparse({});
    if (cur().kind != K::kEnd)
      fail(ErrorKind::kSyntax, cur().line, "unexpected '" + cur().text + "'");
    return tpl;
  }

 private:
  // Levels of blocks and expressions inside each other, taken while one parse call runs and given
  // back at its end: past kMaxNesting the template is refused, not parsed (and later evaluated
  // and freed) by recursion deep enough to overflow the stack. A chain of operators, filters or
  // subscripts nests as deep as it is long.
  class Nesting {
   public:
    explicit Nesting(Parser& p, bool one_level = true) : p_(p), saved_(p.depth_) {
      if (one_level) deeper();
    }
    ~Nesting() { p_.depth_ = saved_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    void deeper() {
      if (++p_.depth_ > kMaxNesting)
        fail(ErrorKind::kBound, p_.cur().line,
             "blocks or expressions nested deeper than " + std::to_string(kMaxNesting));
    }

   private:
    Parser& p_;
    int saved_;
  };

  const Token& cur() const { return t_[pos_]; }
  const Token& peek() const { return t_[pos_ + 1 < t_.size() ? pos_ + 1 : pos_]; }
  bool is_op(const std::string& op) const { return cur().kind == K::kOp && cur().text == op; }
  bool is_name(const std::string& n) const { return cur().kind == K::kName && cur().text == n; }
  bool skip_op(const std::string& op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const std::string& n) {
    if (!is_name(n)) return false;
    ++pos_;
    return true;
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case K::kEnd:
        return "end of template";
      case K::kBlockEnd:
        return "end of statement block";
      case K::kVarEnd:
        return "end of print statement";
      case K::kData:
        return "template data";
      default:
        return "'" + t.text + "'";
    }
  }
  void expect_op(const std::string& op) {
    if (!skip_op(op))
      fail(ErrorKind::kSyntax, cur().line, "expected '" + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().kind != K::kName)
      fail(ErrorKind::kSyntax, cur().line, "expected a name, got " + describe(cur()));
    return t_[pos_++].text;
  }
  void expect_block_end() {
    if (cur().kind != K::kBlockEnd)
      fail(ErrorKind::kSyntax, cur().line,
           "expected end of statement block, got " + describe(cur()));
    ++pos_;
  }

  // Statements until a block whose first name is in `ends` (left unconsumed, after its `{%`).
  Body subparse(const std::set<std::string>& ends) {
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.kind == K::kEnd) {
        if (!ends.empty()) {
          std::string expected;
          for (const std::string& e : ends) expected += (expected.empty() ? "'" : "' or '") + e;
          fail(ErrorKind::kSyntax, t.line,
               "unexpected end of template, expected " + expected + "'");
        }
        return body;
      }
      if (t.kind == K::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kData;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        ++pos_;
      } else if (t.kind == K::kVarBegin) {
        ++pos_;
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = t.line;
        s->expr = parse_tuple(true, false);
        if (cur().kind != K::kVarEnd)
          fail(ErrorKind::kSyntax, cur().line,
               "expected end of print statement, got " + describe(cur()));
        ++pos_;
        body.push_back(std::move(s));
      } else if (t.kind == K::kBlockBegin) {
        ++pos_;
        if (cur().kind == K::kName && ends.count(cur().text)) return body;
        body.push_back(statement());
      } else {
        fail(ErrorKind::kSyntax, t.line, "unexpected " + describe(t));
      }
    }
  }

  StmtPtr statement() {
    const Nesting nesting(*this);
    const Token& t = cur();
    if (t.kind != K::kName) fail(ErrorKind::kSyntax, t.line, "tag name expected");
    auto s = std::make_unique<Stmt>();
    s->line = t.line;
    const std::string name = t.text;
    ++pos_;
    if (name == "if") {
      s->kind = Stmt::Kind::kIf;
      for (;;) {
        ExprPtr cond = parse_tuple(false, false);
        expect_block_end();
        Body b = subparse({"elif", "else", "endif"});
        s->branches.emplace_back(std::move(cond), std::move(b));
        const std::string end = expect_name();
        if (end == "elif") continue;
        if (end == "else") {
          expect_block_end();
          s->body = subparse({"endif"});
          expect_name();
        }
        break;
      }
      expect_block_end();
    } else if (name == "for") {
      s->kind = Stmt::Kind::kFor;
      s->targets.push_back(expect_name());
      while (skip_op(",")) {
        if (is_name("in")) break;
        s->targets.push_back(expect_name());
      }
      if (!skip_name("in"))
        fail(ErrorKind::kSyntax, cur().line, "expected 'in', got " + describe(cur()));
      s->expr = parse_tuple(false, false, true);
      if (skip_name("if")) s->filter = parse_expression(true);
      if (is_name("recursive"))
        fail(ErrorKind::kUnsupported, cur().line, "recursive loops are not supported");
      expect_block_end();
      s->body = subparse({"endfor", "else"});
      if (expect_name() == "else") {
        expect_block_end();
        s->else_body = subparse({"endfor"});
        expect_name();
      }
      expect_block_end();
    } else if (name == "set") {
      s->kind = Stmt::Kind::kSet;
      s->targets.push_back(expect_name());
      if (skip_op(".")) s->text = expect_name();
      if (is_op(","))
        fail(ErrorKind::kUnsupported, cur().line,
             "assigning to several names at once is not supported");
      if (cur().kind == K::kBlockEnd)
        fail(ErrorKind::kUnsupported, cur().line,
             "block assignment ({% set x %}...{% endset %}) is not supported");
      expect_op("=");
      s->expr = parse_tuple(true, false);
      expect_block_end();
    } else if (name == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->text = expect_name();
      expect_op("(");
      while (!skip_op(")")) {
        if (!s->params.empty()) expect_op(",");
        if (skip_op(")")) break;
        std::string param = expect_name();
        ExprPtr def;
        if (skip_op("="))
          def = parse_expression(true);
        else if (!s->params.empty() && s->params.back().second)
          fail(ErrorKind::kSyntax, cur().line, "non-default argument follows default argument");
        s->params.emplace_back(std::move(param), std::move(def));
      }
      expect_block_end();
      s->body = subparse({"endmacro"});
      expect_name();
      if (cur().kind == K::kName) ++pos_;  // {% endmacro name %}
      expect_block_end();
    } else if (name == "break" || name == "continue") {
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_block_end();
    } else if (name == "generation") {
      // transformers' AssistantTracker tag: its body renders as is (the tracker only records
      // where).
      s->kind = Stmt::Kind::kBlock;
      expect_block_end();
      s->body = subparse({"endgeneration"});
      expect_name();
      expect_block_end();
    } else if (is_block_end(name)) {
      // An end tag where its block is not the innermost one open (Jinja2: "Encountered unknown
      // tag"): a mismatched tag, not an unsupported statement.
      fail(ErrorKind::kSyntax, t.line,
           "unexpected '" + name + "': the innermost open block is not '" + name.substr(3) + "'");
    } else {
      fail(ErrorKind::kUnsupported, t.line, "the '" + name + "' statement is not supported");
    }
    return s;
  }

  bool tuple_end(bool for_iter) const {
    const Token& t = cur();
    if (t.kind == K::kVarEnd || t.kind == K::kBlockEnd || t.kind == K::kEnd) return true;
    if (t.kind == K::kOp && (t.text == ")" || t.text == "]")) return true;
    return for_iter && t.kind == K::kName && (t.text == "recursive" || t.text == "if");
  }

  // parser.py's parse_tuple: `a, b` is a tuple, `a` itself.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, bool for_iter = false) {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    for (;;) {
      if (!args.empty()) expect_op(",");
      if (tuple_end(for_iter)) break;
      args.push_back(parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens)
        fail(ErrorKind::kSyntax, line, "expected an expression, got " + describe(cur()));
    }
    auto e = make(Expr::Kind::kTuple, line);
    e->args = std::move(args);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    const Nesting nesting(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    Nesting chain(*this, false);
    while (is_name("if")) {
      chain.deeper();
      const int line = cur().line;
      ++pos_;
      auto c = make(Expr::Kind::kCond, line);
      ExprPtr test = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
      c->args.push_back(std::move(test));
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary_chain(Expr::Kind kind, const std::string& word, ExprPtr (Parser::*next)()) {
    ExprPtr left = (this->*next)();
    Nesting chain(*this, false);
    while (is_name(word)) {
      chain.deeper();
      auto e = make(kind, cur().line);
      ++pos_;
      e->args.push_back(std::move(left));
      e->args.push_back((this->*next)());
      left = std::move(e);
    }
    return left;
  }
  ExprPtr parse_or() { return binary_chain(Expr::Kind::kOr, "or", &Parser::parse_and); }
  ExprPtr parse_and() { return binary_chain(Expr::Kind::kAnd, "and", &Parser::parse_not); }

  ExprPtr parse_not() {
    const Nesting nesting(*this);
    if (is_name("not")) {
      auto e = make(Expr::Kind::kNot, cur().line);
      ++pos_;
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    auto e = make(Expr::Kind::kCompare, line);
    e->args.push_back(std::move(first));
    for (;;) {
      static const std::set<std::string> kCmp = {"==", "!=", "<", "<=", ">", ">="};
      if (cur().kind == K::kOp && kCmp.count(cur().text)) {
        e->ops.push_back(t_[pos_++].text);
      } else if (is_name("in")) {
        ++pos_;
        e->ops.push_back("in");
      } else if (is_name("not") && peek().kind == K::kName && peek().text == "in") {
        pos_ += 2;
        e->ops.push_back("notin");
      } else {
        break;
      }
      e->args.push_back(parse_math1());
    }
    if (e->ops.empty()) return std::move(e->args[0]);
    return e;
  }

  ExprPtr binary_ops(const std::set<std::string>& ops, ExprPtr (Parser::*next)()) {
    ExprPtr left = (this->*next)();
    Nesting chain(*this, false);
    while (cur().kind == K::kOp && ops.count(cur().text)) {
      chain.deeper();
      auto e = make(Expr::Kind::kBinary, cur().line);
      e->name = t_[pos_++].text;
      e->args.push_back(std::move(left));
      e->args.push_back((this->*next)());
      left = std::move(e);
    }
    return left;
  }
  ExprPtr parse_math1() { return binary_ops({"+", "-"}, &Parser::parse_concat); }
  ExprPtr parse_math2() { return binary_ops({"*", "/", "//", "%"}, &Parser::parse_pow); }
  ExprPtr parse_pow() { return binary_ops({"**"}, &Parser::parse_unary_filtered); }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(Expr::Kind::kConcat, line);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  ExprPtr parse_unary(bool with_filter) {
    const Nesting nesting(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = make(is_op("-") ? Expr::Kind::kNeg : Expr::Kind::kPos, cur().line);
      ++pos_;
      e->args.push_back(parse_unary(false));
      node = std::move(e);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    if (t.kind == K::kName) {
      ++pos_;
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        auto e = make(Expr::Kind::kLiteral, line);
        e->literal = Value::boolean(t.text == "true" || t.text == "True");
        return e;
      }
      if (t.text == "none" || t.text == "None") {
        auto e = make(Expr::Kind::kLiteral, line);
        e->literal = Value::none();
        return e;
      }
      auto e = make(Expr::Kind::kName, line);
      e->name = t.text;
      return e;
    }
    if (t.kind == K::kString) {
      std::string s;
      while (cur().kind == K::kString) s += t_[pos_++].text;  // adjacent literals concatenate
      auto e = make(Expr::Kind::kLiteral, line);
      e->literal = Value::string(std::move(s));
      return e;
    }
    if (t.kind == K::kInteger || t.kind == K::kFloat) {
      ++pos_;
      auto e = make(Expr::Kind::kLiteral, line);
      if (t.kind == K::kFloat) {
        e->literal = Value::real(std::strtod(t.text.c_str(), nullptr));
      } else {
        errno = 0;
        const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE)
          fail(ErrorKind::kUnsupported, line, "an integer beyond 64 bits is not supported");
        e->literal = Value::integer(v);
      }
      return e;
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, true);
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto e = make(Expr::Kind::kList, line);
      while (!is_op("]")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("]")) break;
        e->args.push_back(parse_expression(true));
      }
      expect_op("]");
      return e;
    }
    if (skip_op("{")) {
      auto e = make(Expr::Kind::kDict, line);
      while (!is_op("}")) {
        if (!e->args.empty()) expect_op(",");
        if (is_op("}")) break;
        e->args.push_back(parse_expression(true));
        expect_op(":");
        e->args.push_back(parse_expression(true));
      }
      expect_op("}");
      return e;
    }
    fail(ErrorKind::kSyntax, line, "unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    for (Nesting chain(*this, false);; chain.deeper()) {
      if (is_op(".") || is_op("["))
        node = parse_subscript(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    for (Nesting chain(*this, false);; chain.deeper()) {
      if (is_op("|"))
        node = parse_filter(std::move(node));
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const int line = cur().line;
    if (skip_op(".")) {
      if (cur().kind == K::kName) {
        auto e = make(Expr::Kind::kGetattr, line);
        e->name = t_[pos_++].text;
        e->args.push_back(std::move(node));
        return e;
      }
      if (cur().kind != K::kInteger) fail(ErrorKind::kSyntax, line, "expected name or number");
      auto e = make(Expr::Kind::kGetitem, line);
      auto idx = make(Expr::Kind::kLiteral, line);
      idx->literal = Value::integer(std::strtoll(t_[pos_++].text.c_str(), nullptr, 10));
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(idx));
      return e;
    }
    expect_op("[");
    std::vector<ExprPtr> items;
    for (;;) {
      if (!items.empty()) expect_op(",");
      if (is_op("]")) break;
      items.push_back(parse_subscribed());
      if (!is_op(",")) break;
    }
    expect_op("]");
    auto e = make(Expr::Kind::kGetitem, line);
    e->args.push_back(std::move(node));
    if (items.size() == 1) {
      e->args.push_back(std::move(items[0]));
    } else {
      auto tup = make(Expr::Kind::kTuple, line);
      tup->args = std::move(items);
      e->args.push_back(std::move(tup));
    }
    return e;
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    ++pos_;  // ':'
    auto s = make(Expr::Kind::kSlice, line);
    ExprPtr stop;
    ExprPtr step;
    if (!is_op("]") && !is_op(",") && !is_op(":")) stop = parse_expression(true);
    if (skip_op(":") && !is_op("]") && !is_op(",")) step = parse_expression(true);
    s->args.push_back(std::move(start));
    s->args.push_back(std::move(stop));
    s->args.push_back(std::move(step));
    return s;
  }

  // Arguments after '(' up to ')', into e->args (after what is there) and e->kwargs.
  void parse_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**"))
        fail(ErrorKind::kUnsupported, cur().line, "*args and **kwargs in calls are not supported");
      if (cur().kind == K::kName && peek().kind == K::kOp && peek().text == "=") {
        std::string key = t_[pos_].text;
        pos_ += 2;
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty())
          fail(ErrorKind::kSyntax, cur().line, "positional argument follows keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(Expr::Kind::kCall, cur().line);
    e->args.push_back(std::move(node));
    parse_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr node) {
    const int line = cur().line;
    expect_op("|");
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    if (!known_filter(name))
      fail(ErrorKind::kUnsupported, line, "the '" + name + "' filter is not supported");
    auto e = make(Expr::Kind::kFilter, line);
    e->name = name;
    e->args.push_back(std::move(node));
    if (is_op("(")) parse_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = cur().line;
    ++pos_;  // 'is'
    auto e = make(Expr::Kind::kTest, line);
    e->negated = skip_name("not");
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    if (!known_test(e->name))
      fail(ErrorKind::kUnsupported, line, "the '" + e->name + "' test is not supported");
    e->args.push_back(std::move(node));
    const Token& t = cur();
    if (is_op("(")) {
      parse_args(*e);
    } else if ((t.kind == K::kName || t.kind == K::kString || t.kind == K::kInteger ||
                t.kind == K::kFloat || is_op("(") || is_op("[") || is_op("{")) &&
               !(t.kind == K::kName && (t.text == "else" || t.text == "or" || t.text == "and"))) {
      if (is_name("is"))
        fail(ErrorKind::kSyntax, t.line, "You cannot chain multiple tests with is");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  const std::vector<Token>& t_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // Nesting's count
};

}  // namespace

Template parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace draftgate::chat_template
