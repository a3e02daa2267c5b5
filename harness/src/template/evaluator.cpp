// Jinja2's runtime for the parsed subset (see evaluator.h).

#include "draftgate/template/evaluator.h"

#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "draftgate/template/builtins.h"

namespace draftgate::chat_template {
namespace {

struct Scope {
  std::map<std::string, Value> vars;
  Scope* parent = nullptr;
};

enum class Flow { kNormal, kBreak, kContinue };

[[noreturn]] void undefined_error(const Value& v, int line) {
  fail(ErrorKind::kRender, line, "'" + v.undefined_name + "' is undefined");
}

std::int64_t checked(long double exact, int line) {
  if (exact > static_cast<long double>(INT64_MAX) || exact < static_cast<long double>(INT64_MIN))
    fail(ErrorKind::kUnsupported, line, "an integer beyond 64 bits is not supported");
  return static_cast<std::int64_t>(exact);
}

std::int64_t as_int(const Value& v) { return v.kind == Value::Kind::kBool ? v.b : v.i; }
double as_real(const Value& v) {
  return v.kind == Value::Kind::kFloat ? v.f : static_cast<double>(as_int(v));
}

class Renderer {
 public:
  Renderer(const Dict& variables, const RenderLimits& limits) : limits_(limits) {
    for (const auto& [k, v] : variables) root_.vars[k] = v;
  }

  std::string run(const Template& tpl) {
    std::string out;
    exec(tpl.body, root_, out);
    return out;
  }

 private:
  void step(int line) {
    if (++steps_ > limits_.max_steps)
      fail(ErrorKind::kBound, line,
           "rendering did not end within " + std::to_string(limits_.max_steps) + " steps");
  }

  void append(std::string& out, const std::string& text, int line) {
    out += text;
    if (out.size() > limits_.max_output_bytes)
      fail(ErrorKind::kBound, line,
           "the rendered text passed " + std::to_string(limits_.max_output_bytes) + " bytes");
  }

  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow f = exec(*s, scope, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s, Scope& scope, std::string& out) {
    step(s.line);
    switch (s.kind) {
      case Stmt::Kind::kData:
        append(out, s.text, s.line);
        return Flow::kNormal;
      case Stmt::Kind::kOutput:
        append(out, to_str(eval(*s.expr, scope), s.expr->line), s.line);
        return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches)
          if (truthy(eval(*cond, scope))) return exec(body, scope, out);
        return exec(s.body, scope, out);
      case Stmt::Kind::kFor:
        return loop(s, scope, out);
      case Stmt::Kind::kSet: {
        Value v = eval(*s.expr, scope);
        if (s.text.empty()) {
          scope.vars[s.targets[0]] = std::move(v);
          return Flow::kNormal;
        }
        const Value target = lookup(s.targets[0], scope, s.line);
        if (target.kind != Value::Kind::kNamespace)
          fail(ErrorKind::kRender, s.line, "cannot assign attribute on non-namespace object");
        for (auto& kv : *target.ns)
          if (kv.first == s.text) {
            kv.second = std::move(v);
            nesting(target, s.line);  // a chain of namespaces bounded as lists are
            return Flow::kNormal;
          }
        target.ns->emplace_back(s.text, std::move(v));
        nesting(target, s.line);
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro:
        scope.vars[s.text] = macro(s);
        return Flow::kNormal;
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
      case Stmt::Kind::kBlock:
        return exec(s.body, scope, out);
    }
    return Flow::kNormal;
  }

  List items_of(const Value& v, int line) {
    if (v.kind == Value::Kind::kString && v.markup)
      fail(ErrorKind::kUnsupported, line, "iterating a |safe (Markup) string is not supported");
    return iterate(v, line);
  }

  void bind(Scope& scope, const std::vector<std::string>& targets, const Value& item, int line) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = item;
      return;
    }
    const List parts = items_of(item, line);
    if (parts.size() != targets.size())
      fail(ErrorKind::kRender, line,
           "cannot unpack " + std::to_string(parts.size()) + " values into " +
               std::to_string(targets.size()) + " names");
    for (std::size_t k = 0; k < targets.size(); ++k) scope.vars[targets[k]] = parts[k];
  }

  Flow loop(const Stmt& s, Scope& scope, std::string& out) {
    List items = items_of(eval(*s.expr, scope), s.line);
    if (s.filter) {
      List kept;
      for (const Value& item : items) {
        step(s.line);
        Scope probe;
        probe.parent = &scope;
        bind(probe, s.targets, item, s.line);
        if (truthy(eval(*s.filter, probe))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const std::int64_t n = static_cast<std::int64_t>(items.size());
    for (std::int64_t k = 0; k < n; ++k) {
      step(s.line);
      Scope iteration;
      iteration.parent = &scope;
      bind(iteration, s.targets, items[static_cast<std::size_t>(k)], s.line);
      Dict loop_vars = {
          {"index", Value::integer(k + 1)},    {"index0", Value::integer(k)},
          {"revindex", Value::integer(n - k)}, {"revindex0", Value::integer(n - k - 1)},
          {"first", Value::boolean(k == 0)},   {"last", Value::boolean(k == n - 1)},
          {"length", Value::integer(n)},       {"depth", Value::integer(1)},
          {"depth0", Value::integer(0)}};
      if (k > 0) loop_vars.emplace_back("previtem", items[static_cast<std::size_t>(k - 1)]);
      if (k + 1 < n) loop_vars.emplace_back("nextitem", items[static_cast<std::size_t>(k + 1)]);
      iteration.vars["loop"] = Value::make_dict(std::move(loop_vars));
      if (exec(s.body, iteration, out) == Flow::kBreak) break;
    }
    if (n == 0) return exec(s.else_body, scope, out);
    return Flow::kNormal;
  }

  Value macro(const Stmt& s) {
    return Value::callable([this, &s](const CallArgs& a, int line) -> Value {
      if (a.positional.size() > s.params.size())
        fail(ErrorKind::kRender, line,
             "macro '" + s.text + "' takes not more than " + std::to_string(s.params.size()) +
                 " argument(s)");
      if (++depth_ > limits_.max_depth)
        fail(ErrorKind::kBound, line,
             "macros nested deeper than " + std::to_string(limits_.max_depth));
      Scope frame;
      frame.parent = &root_;
      for (const auto& [k, v] : a.keyword) {
        bool known = false;
        for (const auto& p : s.params) known = known || p.first == k;
        if (!known)
          fail(ErrorKind::kRender, line,
               "macro '" + s.text + "' takes no keyword argument '" + k + "'");
      }
      for (std::size_t k = 0; k < s.params.size(); ++k) {
        const auto& [name, def] = s.params[k];
        const Value* given = k < a.positional.size() ? &a.positional[k] : nullptr;
        for (const auto& kv : a.keyword)
          if (kv.first == name) {
            if (given)
              fail(ErrorKind::kRender, line,
                   "macro '" + s.text + "' got multiple values for argument '" + name + "'");
            given = &kv.second;
          }
        frame.vars[name] = given ? *given : def ? eval(*def, frame) : Value::undefined(name);
      }
      std::string out;
      exec(s.body, frame, out);
      --depth_;
      return Value::string(std::move(out));
    });
  }

  Value global(const std::string& name, int line) {
    static const std::set<std::string> kRefused = {"lipsum",  "cycler", "joiner", "kwargs",
                                                   "varargs", "caller", "self"};
    if (kRefused.count(name))
      fail(ErrorKind::kUnsupported, line, "'" + name + "' is not supported");
    if (name == "raise_exception")
      return Value::callable([](const CallArgs& a, int l) -> Value {
        const std::string message =
            a.positional.empty() ? std::string() : to_str(a.positional[0], l);
        fail(ErrorKind::kRaised, l, message);
      });
    if (name == "namespace")
      return Value::callable([](const CallArgs& a, int l) -> Value {
        Value v;
        v.kind = Value::Kind::kNamespace;
        v.ns = std::make_shared<Dict>();
        if (a.positional.size() > 1)
          fail(ErrorKind::kRender, l, "namespace() takes at most one positional argument");
        if (!a.positional.empty()) {
          if (a.positional[0].kind != Value::Kind::kDict)
            fail(ErrorKind::kUnsupported, l, "namespace() of a non-dict is not supported");
          *v.ns = *a.positional[0].dict;
        }
        for (const auto& kv : a.keyword) {
          bool replaced = false;
          for (auto& e : *v.ns)
            if (e.first == kv.first) {
              e.second = kv.second;
              replaced = true;
            }
          if (!replaced) v.ns->push_back(kv);
        }
        nesting(v, l);
        return v;
      });
    if (name == "range")
      return Value::callable([](const CallArgs& a, int l) -> Value {
        if (!a.keyword.empty() || a.positional.empty() || a.positional.size() > 3)
          fail(ErrorKind::kRender, l, "range expected 1 to 3 integer arguments");
        std::int64_t p[3] = {0, 0, 1};
        for (std::size_t k = 0; k < a.positional.size(); ++k) {
          const Value& x = a.positional[k];
          if (x.kind != Value::Kind::kInt && x.kind != Value::Kind::kBool)
            fail(ErrorKind::kRender, l,
                 "'" + type_name(x) + "' object cannot be interpreted as an integer");
          p[a.positional.size() == 1 ? 1 : k] = as_int(x);
        }
        if (p[2] == 0) fail(ErrorKind::kRender, l, "range() arg 3 must not be zero");
        List out;
        // A step past the 64-bit range also passes the stop.
        for (std::int64_t x = p[0]; p[2] > 0 ? x < p[1] : x > p[1];) {
          // The sandbox's MAX_RANGE.
          if (out.size() >= 100000)
            fail(ErrorKind::kRender, l,
                 "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
          out.push_back(Value::integer(x));
          if (__builtin_add_overflow(x, p[2], &x)) break;
        }
        return Value::make_list(std::move(out));
      });
    if (name == "strftime_now")
      return Value::callable([](const CallArgs& a, int l) -> Value {
        if (a.positional.size() != 1 || !a.positional[0].is_string())
          fail(ErrorKind::kRender, l, "strftime_now takes one format string");
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buf[512];
        const std::size_t n = std::strftime(buf, sizeof buf, a.positional[0].s->c_str(), &local);
        if (n == 0 && !a.positional[0].s->empty())
          fail(ErrorKind::kUnsupported, l,
               "strftime_now format is empty after formatting or too long");
        return Value::string(std::string(buf, n));
      });
    if (name == "dict")
      return Value::callable([](const CallArgs& a, int l) -> Value {
        if (!a.positional.empty())
          fail(ErrorKind::kUnsupported, l, "dict() with positional arguments is not supported");
        Dict d(a.keyword.begin(), a.keyword.end());
        return Value::make_dict(std::move(d));
      });
    return Value::undefined(name);
  }

  Value lookup(const std::string& name, Scope& scope, int line) {
    for (Scope* s = &scope; s; s = s->parent) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    return global(name, line);
  }

  CallArgs args_of(const Expr& e, Scope& scope, std::size_t skip) {
    CallArgs a;
    for (std::size_t k = skip; k < e.args.size(); ++k)
      a.positional.push_back(eval(*e.args[k], scope));
    for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v, scope));
    return a;
  }

  Value binary(const std::string& op, const Value& a, const Value& b, int line) {
    if (a.is_undefined()) undefined_error(a, line);
    if (b.is_undefined()) undefined_error(b, line);
    const bool numbers = a.is_number() && b.is_number();
    const bool ints = numbers && a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat;
    auto type_error = [&]() -> Value {
      fail(ErrorKind::kRender, line,
           "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
               type_name(b) + "'");
    };
    if (op == "+") {
      if (ints)
        return Value::integer(checked(static_cast<long double>(as_int(a)) + as_int(b), line));
      if (numbers) return Value::real(as_real(a) + as_real(b));
      if (a.is_string() && b.is_string()) {
        if (a.markup || b.markup)
          fail(ErrorKind::kUnsupported, line,
               "'+' with a |safe (Markup) string, which escapes the other operand, is not "
               "supported");
        if (a.s->size() + b.s->size() > kMaxStringBytes)
          fail(ErrorKind::kBound, line,
               "a string grew past " + std::to_string(kMaxStringBytes) + " bytes");
        return Value::string(*a.s + *b.s);
      }
      if (a.kind == Value::Kind::kList && b.kind == Value::Kind::kList && a.tuple == b.tuple) {
        List l = *a.list;
        l.insert(l.end(), b.list->begin(), b.list->end());
        return Value::make_list(std::move(l), a.tuple);
      }
      return type_error();
    }
    if (op == "*") {
      if (ints)
        return Value::integer(checked(static_cast<long double>(as_int(a)) * as_int(b), line));
      if (numbers) return Value::real(as_real(a) * as_real(b));
      const bool str_rep =
          (a.is_string() && (b.kind == Value::Kind::kInt || b.kind == Value::Kind::kBool)) ||
          (b.is_string() && (a.kind == Value::Kind::kInt || a.kind == Value::Kind::kBool));
      if (str_rep) {
        const Value& s = a.is_string() ? a : b;
        if (s.markup)
          fail(ErrorKind::kUnsupported, line, "'*' of a |safe (Markup) string is not supported");
        const std::int64_t n = as_int(a.is_string() ? b : a);
        if (n > 0 && s.s->size() * static_cast<std::uint64_t>(n) > kMaxStringBytes)
          fail(ErrorKind::kBound, line,
               "a string grew past " + std::to_string(kMaxStringBytes) + " bytes");
        std::string out;
        for (std::int64_t k = 0; k < n; ++k) out += *s.s;
        return Value::string(std::move(out));
      }
      return type_error();
    }
    if (op == "%" && a.is_string())
      fail(ErrorKind::kUnsupported, line, "'%' formatting of a string is not supported");
    if (!numbers) return type_error();
    if (op == "-") {
      if (ints)
        return Value::integer(checked(static_cast<long double>(as_int(a)) - as_int(b), line));
      return Value::real(as_real(a) - as_real(b));
    }
    if (op == "/") {
      if (as_real(b) == 0) fail(ErrorKind::kRender, line, "division by zero");
      if (ints) return Value::real(static_cast<double>(as_int(a)) / static_cast<double>(as_int(b)));
      return Value::real(as_real(a) / as_real(b));
    }
    if (op == "//" || op == "%") {
      if (as_real(b) == 0)
        fail(ErrorKind::kRender, line,
             !ints       ? (op == "%" ? "float modulo" : "float floor division by zero")
             : op == "%" ? "integer modulo by zero"
                         : "integer division or modulo by zero");
      if (ints) {
        const std::int64_t x = as_int(a), y = as_int(b);
        // x / -1 overflows (and traps) at INT64_MIN: the quotient is -x, the remainder 0.
        if (y == -1)
          return op == "//" ? Value::integer(checked(-static_cast<long double>(x), line))
                            : Value::integer(0);
        std::int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // Python floors
        return op == "//" ? Value::integer(q) : Value::integer(x - q * y);
      }
      // CPython's float_divmod, so inf, nan and signed zeros come out as Python's.
      const double x = as_real(a), y = as_real(b);
      double mod = std::fmod(x, y), div = (x - mod) / y;
      if (mod != 0) {
        if ((y < 0) != (mod < 0)) {
          mod += y;
          div -= 1.0;
        }
      } else {
        mod = std::copysign(0.0, y);
      }
      if (op == "%") return Value::real(mod);
      double floordiv = std::copysign(0.0, x / y);
      if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
      }
      return Value::real(floordiv);
    }
    if (op == "**") {
      if (ints && as_int(b) >= 0) {
        long double r = 1;
        for (std::int64_t k = 0; k < as_int(b); ++k) {
          r *= as_int(a);
          checked(r, line);
        }
        return Value::integer(checked(r, line));
      }
      // Python's float power: 0 to a negative power raises, a negative base to a fractional power
      // is complex, and a finite result too large raises OverflowError.
      const double x = as_real(a), y = as_real(b);
      if (x == 0 && y < 0)
        fail(ErrorKind::kRender, line, "0.0 cannot be raised to a negative power");
      if (x < 0 && std::isfinite(y) && y != std::floor(y))
        fail(ErrorKind::kUnsupported, line,
             "a negative number to a fractional power is complex, which is not supported");
      const double r = std::pow(x, y);
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
        fail(ErrorKind::kRender, line, "(34, 'Numerical result out of range')");
      return Value::real(r);
    }
    return type_error();
  }

  bool compare(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "==") return equal(a, b);
    if (op == "!=") return !equal(a, b);
    if (op == "in") return contains(b, a, line);
    if (op == "notin") return !contains(b, a, line);
    if (op == "<") return less(a, b, line);
    if (op == ">") return less(b, a, line);
    if (op == "<=") return less(a, b, line) || equal(a, b);
    return less(b, a, line) || equal(a, b);  // ">="
  }

  Value eval(const Expr& e, Scope& scope) {
    step(e.line);
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return lookup(e.name, scope, e.line);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List l;
        for (const ExprPtr& x : e.args) l.push_back(eval(*x, scope));
        return Value::make_list(std::move(l), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        Dict d;
        for (std::size_t k = 0; k + 1 < e.args.size(); k += 2) {
          const Value key = eval(*e.args[k], scope);
          if (!key.is_string())
            fail(ErrorKind::kUnsupported, e.line,
                 "a dict key that is not a string is not supported");
          Value v = eval(*e.args[k + 1], scope);
          bool replaced = false;
          for (auto& kv : d)
            if (kv.first == *key.s) {
              kv.second = v;
              replaced = true;
            }
          if (!replaced) d.emplace_back(*key.s, std::move(v));
        }
        return Value::make_dict(std::move(d));
      }
      case Expr::Kind::kGetattr:
        // The loop's two methods (defined in Jinja2, so `is defined` must not read them as
        // undefined either).
        if (e.args[0]->kind == Expr::Kind::kName && e.args[0]->name == "loop" &&
            (e.name == "cycle" || e.name == "changed"))
          fail(ErrorKind::kUnsupported, e.line, "loop." + e.name + " is not supported");
        return get_attribute(eval(*e.args[0], scope), e.name, e.line);
      case Expr::Kind::kGetitem: {
        const Value obj = eval(*e.args[0], scope);
        const Expr& index = *e.args[1];
        if (index.kind == Expr::Kind::kSlice) {
          auto part = [&](const ExprPtr& p) { return p ? eval(*p, scope) : Value::none(); };
          return slice_of(obj, part(index.args[0]), part(index.args[1]), part(index.args[2]),
                          e.line);
        }
        return get_item(obj, eval(index, scope), e.line);
      }
      case Expr::Kind::kSlice:
        fail(ErrorKind::kUnsupported, e.line, "a slice outside [] is not supported");
      case Expr::Kind::kCall: {
        const Value f = eval(*e.args[0], scope);
        const CallArgs a = args_of(e, scope, 1);
        if (f.is_undefined()) undefined_error(f, e.line);
        if (f.kind != Value::Kind::kCallable)
          fail(ErrorKind::kRender, e.line, "'" + type_name(f) + "' object is not callable");
        return (*f.call)(a, e.line);
      }
      case Expr::Kind::kFilter: {
        const Value v = eval(*e.args[0], scope);
        return apply_filter(e.name, v, args_of(e, scope, 1), e.line);
      }
      case Expr::Kind::kTest: {
        const Value v = eval(*e.args[0], scope);
        return Value::boolean(apply_test(e.name, v, args_of(e, scope, 1), e.line) != e.negated);
      }
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos: {
        const Value v = eval(*e.args[0], scope);
        if (v.is_undefined()) undefined_error(v, e.line);
        if (!v.is_number())
          fail(ErrorKind::kRender, e.line,
               "bad operand type for unary " + std::string(e.kind == Expr::Kind::kNeg ? "-" : "+") +
                   ": '" + type_name(v) + "'");
        if (e.kind == Expr::Kind::kPos)
          return v.kind == Value::Kind::kBool ? Value::integer(v.b) : v;
        if (v.kind == Value::Kind::kFloat) return Value::real(-v.f);
        return Value::integer(checked(-static_cast<long double>(as_int(v)), e.line));
      }
      case Expr::Kind::kNot:
        return Value::boolean(!truthy(eval(*e.args[0], scope)));
      case Expr::Kind::kBinary:
        return binary(e.name, eval(*e.args[0], scope), eval(*e.args[1], scope), e.line);
      case Expr::Kind::kCompare: {
        Value left = eval(*e.args[0], scope);
        for (std::size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.args[k + 1], scope);
          if (!compare(e.ops[k], left, right, e.line)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::Kind::kAnd: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? eval(*e.args[1], scope) : a;
      }
      case Expr::Kind::kOr: {
        Value a = eval(*e.args[0], scope);
        return truthy(a) ? a : eval(*e.args[1], scope);
      }
      case Expr::Kind::kCond:
        if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
        return e.args[2] ? eval(*e.args[2], scope)
                         : Value::undefined("the else branch of an if expression");
      case Expr::Kind::kConcat: {
        std::string s;
        for (const ExprPtr& x : e.args) {
          s += to_str(eval(*x, scope), e.line);
          if (s.size() > kMaxStringBytes)
            fail(ErrorKind::kBound, e.line,
                 "a string grew past " + std::to_string(kMaxStringBytes) + " bytes");
        }
        return Value::string(std::move(s));
      }
    }
    return Value::undefined();
  }

  RenderLimits limits_;
  Scope root_;
  std::uint64_t steps_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string render(const Template& tpl, const Dict& variables, const RenderLimits& limits) {
  return Renderer(variables, limits).run(tpl);
}

}  // namespace draftgate::chat_template
