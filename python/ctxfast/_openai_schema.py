"""OpenAI ``tools`` as the model reads them: the JSON schemas rendered as a TypeScript namespace,
tokenized as one string, plus the constants around it. ``ctxfast.openai`` documents the rules;
this module applies them.

The API does not send the schemas' JSON to the model. It renders them as TypeScript type
declarations inside ``namespace functions { ... }`` (reverse-engineered for the hosted API by
hmarr/openai-chat-tokens and its ports, pamelafox/openai-messages-token-helper, LiteLLM and
forestwanglin/openai-java; OpenAI publishes the same format for gpt-oss in openai/harmony)::

    namespace functions {

    // Get the current weather in a given location
    type get_current_weather = (_: {
    // The city and state, e.g. San Francisco, CA
    location: string,
    unit?: "celsius" | "fahrenheit", // default: "celsius"
    }) => any;

    } // namespace functions

Where the public renderers disagree, the API's own counts decide (the 18 cases that LiteLLM's
tests carry, ``tests/test_openai_schema_counts.py``): nested objects' properties are **not**
indented (the two-space indent of hmarr and LiteLLM is 1 to 3 tokens over on all four nested
cases; unindented, three are exact and one is 1 over), and integer enums are written bare
(``-1 | 1``; LiteLLM's quoted ``"-1" | "1"`` is 2 over, bare is 1 over). Defaults, examples,
type lists and ``anyOf``/``oneOf`` follow openai/harmony; no API count covers them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from ctxfast import _payload
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._payload import MAX_DEPTH, Origin, Where

#: Every constant of the tools part of a Chat Completions request, in tokens. Sources: hmarr
#: (``functionsTokensEstimate``, ``promptTokensEstimate``; validated against the API), the
#: named-tool figure of pamelafox and LiteLLM, and the API counts in LiteLLM's tests
#: (66 → 67 with ``"none"``, 66 → 75 naming ``search_sources``, 42 → 51, 53 → 64).
OVERHEADS = {
    # The namespace's framing: the system message (header and tools heading) it is sent in.
    "functions": 9,
    # When the request has a system (or developer) message, the namespace joins the first one
    # instead of coming in a message of its own, whose framing is then not paid.
    "shares_system": -4,
    # tool_choice: "none" adds one token; naming a function adds 7 plus the name's tokens;
    # "auto" (the default) adds nothing. "required" and "allowed_tools" have no public
    # measurement and are counted as "auto" (an estimate).
    "choice_none": 1,
    "choice_named": 7,
    "choice_auto": 0,
    "choice_required": 0,
}
#: The ``tool_choice`` strings of Chat Completions.
TOOL_CHOICES = ("auto", "none", "required")
_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


class _Text:
    """The rendered namespace as pieces, with where each caller-provided field starts in it.
    Offsets are worked out once at the end (``origins``): appending a piece is all the
    rendering pays."""

    __slots__ = ("parts", "add", "marks", "item")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.add = self.parts.append
        #: (path, tool index, the piece it starts at, a shift of that start)
        self.marks: list[tuple[str, int, int, int]] = []
        self.item = 0

    def field(self, s: str, path: str, shift: int = 0) -> None:
        self.marks.append((path, self.item, len(self.parts), shift))
        self.parts.append(s)

    def origins(self) -> tuple[Origin, ...]:
        starts = list(accumulate(map(len, self.parts), initial=0))
        return tuple(Origin(path, item, starts[k] + shift) for path, item, k, shift in self.marks)


def render(tools: Sequence[Any]) -> tuple[str, Where]:
    """The namespace text for `tools` and where its pieces came from (for error messages)."""
    out = _Text()
    out.add("namespace functions {\n\n")
    for i, tool in enumerate(tools):
        out.item = i
        if not isinstance(tool, dict):
            raise ArgumentTypeError(f"tools[{i}] must be a dict, not {type(tool).__name__}")
        fn = tool.get("function", tool)
        at = f"tools[{i}].function" if "function" in tool else f"tools[{i}]"
        if not isinstance(fn, dict) or "name" not in fn:
            raise InvalidArgumentError(f"tools[{i}] has no function name")
        name = _payload.text(fn["name"], f"{at}.name")
        desc = fn.get("description")
        if desc:
            # Each line of a function's description is a comment line (openai/harmony).
            desc_text = _payload.text(desc, f"{at}.description")
            consumed = 0
            for line in desc_text.split("\n"):
                out.add("// ")
                # The origin's start is shifted to where the description would begin, so that a
                # position in any line maps back to an offset in the caller's description.
                out.field(line, f"{at}.description", -consumed)
                out.add("\n")
                consumed += len(line) + 1
        out.add("type ")
        out.field(name, f"{at}.name")
        params = fn.get("parameters") or {}
        if not isinstance(params, dict):
            raise ArgumentTypeError(f"tools[{i}].parameters must be a dict, not {type(params).__name__}")
        props = params.get("properties") or {}
        if not isinstance(props, dict):
            raise ArgumentTypeError(f"tools[{i}].parameters.properties must be a dict, not {type(props).__name__}")
        if props:
            out.add(" = (_: {\n")
            _properties(out, params, f"{at}.parameters", 1, check=True)
            out.add("}) => any;\n\n")
        else:
            out.add(" = () => any;\n\n")
    out.add("} // namespace functions")
    return "".join(out.parts), out.origins()


def _properties(out: _Text, obj: dict[str, Any], at: str, depth: int, check: bool = False) -> None:
    """An object's properties, one per line, each after its comments. With `check`, a top-level
    property's whole schema is then checked (depth, str keys, JSON values) where the rendering
    may not have read all of it, so such input is still refused as before."""
    required = obj.get("required")
    required = set(r for r in required if isinstance(r, str)) if isinstance(required, list) else set()
    props = obj.get("properties") or {}
    if not isinstance(props, dict):
        raise ArgumentTypeError(f"{at}.properties must be a dict, not {type(props).__name__}")
    for key, spec in props.items():
        prop = f"{at}.properties{_payload._step(key)}"
        key_text = _payload.text(key, prop)
        if isinstance(spec, dict):
            desc = spec.get("description")
            if desc:
                out.add("// ")
                out.field(_payload.text(desc, f"{prop}.description"), f"{prop}.description")
                out.add("\n")
            examples = spec.get("examples")
            if isinstance(examples, list) and examples:
                out.add("// Examples:\n")
                for n, ex in enumerate(examples):
                    if isinstance(ex, str):
                        out.add('// - "')
                        out.field(ex, f"{prop}.examples[{n}]")
                        out.add('"\n')
        out.field(key_text, prop)
        out.add(": " if key in required else "?: ")
        _type(out, spec, prop, depth)
        out.add(",")
        if isinstance(spec, dict) and "default" in spec:
            default = spec["default"]
            out.add(" // default: ")
            if isinstance(default, str):
                quoted = not spec.get("enum")
                out.add('"' if quoted else "")
                out.field(default, f"{prop}.default")
                out.add('"' if quoted else "")
            else:
                out.field(_payload.as_json(default, prop, ".default"), f"{prop}.default")
        out.add("\n")
        if check and (not isinstance(spec, dict) or spec.get("type") in (None, "object", "array")):
            # What the rendering may not read (an untyped or nested schema's other keys) is still
            # checked, as when such schemas were counted by their JSON; a flat typed property's
            # fields are all read above.
            _payload.check_tree(spec, prop, strict_json=True)


def _type(out: _Text, spec: Any, at: str, depth: int) -> None:
    """A schema's TypeScript type."""
    if depth > MAX_DEPTH:
        raise InvalidArgumentError(f"{at} is nested more than {MAX_DEPTH} levels deep; ctxfast reads at most {MAX_DEPTH}")
    if not isinstance(spec, dict):
        out.add("any")
        return
    if "enum" in spec:
        values = spec["enum"]
        if not isinstance(values, list):
            raise ArgumentTypeError(f"{at}: enum must be a list, not {type(values).__name__}")
        if values:
            _literals(out, values, at, ".enum")
            return
    if "const" in spec:
        _literals(out, [spec["const"]], at, ".const")
        return
    kind = spec.get("type")
    if isinstance(kind, list):
        names = [_SCALARS.get(k, k) if isinstance(k, str) else "any" for k in kind]
        if names:
            out.add(" | ".join(names))
            return
        kind = None
    if kind is not None and not isinstance(kind, str):
        kind = _payload.text(kind, at, ".type")
    if kind is None:
        variants = spec.get("anyOf", spec.get("oneOf"))
        if isinstance(variants, list) and variants:
            for n, v in enumerate(variants):
                if n:
                    out.add(" | ")
                _type(out, v, f"{at}.anyOf[{n}]", depth + 1)
            return
        kind = "object" if "properties" in spec else "array" if "items" in spec else None
    if kind in _SCALARS:
        out.add(_SCALARS[kind])
    elif kind == "array":
        items = spec.get("items")
        if isinstance(items, dict):
            _type(out, items, f"{at}.items", depth + 1)
            out.add("[]")
        else:
            out.add("any[]")
    elif kind == "object":
        # Nested properties are not indented: the API's counts fit this (see the module docstring).
        out.add("{\n")
        _properties(out, spec, at, depth + 1)
        out.add("}")
    else:
        out.add("any")


def _literals(out: _Text, values: list[Any], at: str, field: str) -> None:
    """Enum values: strings quoted, the rest as JSON (``-1 | 1``, ``true``)."""
    for n, v in enumerate(values):
        if n:
            out.add(" | ")
        path = f"{at}{field}[{n}]" if field == ".enum" else f"{at}{field}"
        if isinstance(v, str):
            out.add('"')
            out.field(v, path)
            out.add('"')
        else:
            out.field(_payload.as_json(v, path), path)


def choice_cost(tool_choice: Any, tools: Sequence[Any]) -> tuple[list[str], int]:
    """What ``tool_choice`` adds: (strings to tokenize, constant tokens). A named tool must be
    one of `tools` (the API refuses the request otherwise)."""
    if tool_choice is None or not tools:
        return [], 0
    if isinstance(tool_choice, str):
        if tool_choice not in TOOL_CHOICES:
            raise InvalidArgumentError(
                f"tool_choice must be one of {', '.join(map(repr, TOOL_CHOICES))} or a dict naming a function, "
                f"not {_payload.preview(tool_choice)}"
            )
        return [], OVERHEADS[f"choice_{tool_choice}"]
    if not isinstance(tool_choice, dict):
        raise ArgumentTypeError(f"tool_choice must be a str or a dict, not {type(tool_choice).__name__}")
    kind = tool_choice.get("type")
    if kind == "allowed_tools":
        return [], OVERHEADS["choice_auto"]
    if kind not in ("function", "custom"):
        raise InvalidArgumentError(
            "tool_choice must be {'type': 'function', 'function': {'name': ...}} (or 'allowed_tools', "
            f"'custom'), not type {_payload.preview(kind)}"
        )
    named = tool_choice.get(kind)
    if not isinstance(named, dict) or not isinstance(named.get("name"), str):
        raise InvalidArgumentError(f"tool_choice.{kind}.name must be a str naming one of the tools")
    name = named["name"]
    names = {_tool_name(t) for t in tools}
    if name not in names:
        raise InvalidArgumentError(f"tool_choice names {_payload.preview(name)}, which is not one of the tools")
    return [name], OVERHEADS["choice_named"]


def _tool_name(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function", tool)
    return fn.get("name") if isinstance(fn, dict) else None


def tools_parts(
    tools: Sequence[Any], tool_choice: Any, has_system: bool
) -> tuple[list[str], list[Where], int]:
    """The tools part of a request as (strings to tokenize, where each came from, constant tokens):
    the rendered namespace, a named ``tool_choice``'s name, and the ``OVERHEADS`` that apply."""
    if not tools:
        choice_cost(tool_choice, tools)
        return [], [], 0
    text, where = render(tools)
    strings, origins = [text], [where]
    constant = OVERHEADS["functions"] + (OVERHEADS["shares_system"] if has_system else 0)
    named, extra = choice_cost(tool_choice, tools)
    strings += named
    origins += [Origin("tool_choice")] * len(named)
    return strings, origins, constant + extra
