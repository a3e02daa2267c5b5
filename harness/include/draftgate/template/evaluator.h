#pragma once
// Renders a parsed template with Jinja2's runtime semantics (jinja2/runtime.py, compiler.py):
// a fresh scope per loop iteration, macros that see the template's top-level names at call
// time, loop.* variables, loop controls, and the globals transformers adds (raise_exception,
// strftime_now) besides Jinja2's namespace and range. Bounded in steps, nesting and output.

#include <cstddef>
#include <cstdint>
#include <string>

#include "draftgate/template/parser.h"
#include "draftgate/template/value.h"

namespace draftgate::chat_template {

struct RenderLimits {
  std::uint64_t max_steps = 5'000'000;       // expressions and statements evaluated
  std::size_t max_output_bytes = 16u << 20;  // the rendered text
  int max_depth = 200;                       // nested macro calls
};

// Throws TemplateError.
std::string render(const Template& tpl, const Dict& variables, const RenderLimits& limits);

}  // namespace draftgate::chat_template
