"""The oracle for draftgate's chat-template renderer: Python Jinja2 (Debian's python3-jinja2)
configured exactly as transformers' _compile_jinja_template configures it
(huggingface/transformers src/transformers/utils/chat_template_utils.py, commit 5e43e2e):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols
extension and the {% generation %} tag, transformers' tojson, raise_exception and strftime_now;
variables as render_jinja_template passes them (messages, tools, documents=None,
add_generation_prompt, then the special tokens and kwargs).

Reads a JSON list of cases on stdin, each {"template": TEXT, "messages", "tools",
"add_generation_prompt", "enable_thinking"?, "variables"?}; prints a JSON list of
{"rendered": TEXT} or {"error": "ExceptionType: message"}.
"""

import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    # transformers' AssistantTracker without the tracking: the body renders as is.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_support"), [], [], body).set_lineno(lineno)

    def _support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    env = environment()
    compiled = {}  # transformers caches compiled templates too (lru_cache)
    out = []
    for case in json.load(sys.stdin):
        try:
            if case["template"] not in compiled:
                compiled[case["template"]] = env.from_string(case["template"])
            template = compiled[case["template"]]
            kwargs = dict(case.get("variables", {}))
            if "enable_thinking" in case:
                kwargs["enable_thinking"] = case["enable_thinking"]
            rendered = template.render(
                messages=case["messages"],
                tools=case.get("tools"),
                documents=None,
                add_generation_prompt=case.get("add_generation_prompt", True),
                **kwargs,
            )
            out.append({"rendered": rendered})
        except Exception as e:  # every failure is a result the C++ side must also give
            out.append({"error": type(e).__name__ + ": " + str(e)})
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
