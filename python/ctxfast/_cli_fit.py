"""``ctxfast fit``: read a chat request, settle its format, encoding and reserve, fit it, write
it and say what happened.

Order matters for what a failure leaves behind: everything that can fail (reading, detection,
the fit, serialising the output, writing it) happens before anything is printed, so a failed
run prints one error and no trace (except an ``Unfittable``, whose failed attempt's trace is
the explanation), and never leaves a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

from ctxfast import Budget, CtxfastError, Fit, Policy, Tokenizer, Unfittable
from ctxfast import _cli_chat
from ctxfast import _cli_io as io
from ctxfast._cli_detect import (
    Detection,
    Refusal,
    check_supported,
    choose_encoding,
    describe_format,
    detect,
    native_format,
    payload_reserve,
)
from ctxfast._cli_policy import load_policy, load_tokenizer
from ctxfast._cli_render import SCHEMA, fit_json, print_text, with_reserve_note


@dataclass
class Options:
    payload: str
    window: int
    reserve: int | None
    policy: str
    fmt: str | None
    encoding: str | None
    output: str | None
    as_json: bool
    quiet: bool
    template: str | None = None
    tokenizer: str | None = None


def _adapter_fit(fmt: str, data: Any, messages: Any, budget: Budget, policy: Policy, tok: Tokenizer) -> tuple[list[Any], Fit]:
    from ctxfast import anthropic as anthropic_adapter
    from ctxfast import openai as openai_adapter

    body = data if isinstance(data, dict) else {}
    if fmt == "responses":
        from ctxfast.responses import fit_responses

        return fit_responses(messages, budget, instructions=body.get("instructions"), tools=body.get("tools"),
                             policy=policy, tokenizer=tok, previous_response_id=body.get("previous_response_id"))
    if fmt == "gemini":
        from ctxfast.gemini import fit_contents

        system = body.get("systemInstruction", body.get("system_instruction"))
        return fit_contents(messages, budget, system_instruction=system, tools=body.get("tools"), policy=policy,
                            tokenizer=tok)
    if fmt == "anthropic":
        return anthropic_adapter.fit_messages(
            body.get("system"), messages, budget, tools=body.get("tools"), policy=policy, tokenizer=tok,
            model=body.get("model"), tool_choice=body.get("tool_choice") or "auto",
        )
    return openai_adapter.fit_messages(messages, budget, tools=body.get("tools"), policy=policy, tokenizer=tok,
                                       tool_choice=body.get("tool_choice"))


def _check_shape(name: str, messages: Any) -> None:
    """What detection reads must be there: a list of objects with a string role (in both
    formats; the adapters check the rest)."""
    if messages is None:
        io.fail(f"{name}: expected a JSON object with a 'messages' list (or a bare list of messages)")
    if not isinstance(messages, list):
        io.fail(f"{name}: 'messages' must be a list of message objects, not {_json_type(messages)}")
    if not messages:
        io.fail(f"{name}: 'messages' is empty: there is no request to fit")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            io.fail(f"{name}: messages[{i}] must be a JSON object, not {_json_type(m)}")
        role = m.get("role")
        if role is None:
            io.fail(f"{name}: messages[{i}] has no 'role'")
        if role is not None and not isinstance(role, str):
            io.fail(f"{name}: messages[{i}].role must be a string, not {_json_type(role)}")


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _count_kind(source: str) -> str:
    return {"estimate": "estimate", "default": "default_encoding"}.get(source, "exact")


def _unfittable_hint(e: Unfittable, o: Options, reserve: int, reserve_note: str) -> str | None:
    shortfall = getattr(e, "shortfall", 0)
    if not isinstance(shortfall, int) or shortfall <= 0:
        return None
    options = [f"raise --window to {o.window + shortfall:,} or more"]
    if reserve >= shortfall:
        options.append(f"lower --reserve to {reserve - shortfall:,} or less (now {reserve:,}{reserve_note})")
    floors = getattr(e, "floor_tokens", 0)
    if isinstance(floors, int) and floors > 0:
        options.append(f"choose a --policy whose floors keep less (they keep {floors:,} tokens)")
    return ", or ".join(options)


def run(o: Options) -> None:
    name, text, mode = io.read_text(o.payload)
    data = io.parse_json(name, text)
    policy = load_policy(o.policy, prefix="--policy: ")
    bare = isinstance(data, list)
    native = native_format(data)
    found: Detection
    template = None
    if _cli_chat.wanted(o.fmt, o.template, o.tokenizer):
        found = Detection("chat", "--format") if o.fmt else Detection("chat", "detected", ["--template/--tokenizer"])
        key = "messages"
        messages = data if bare else data.get("messages") if isinstance(data, dict) else None
        _check_shape(name, messages)
        template, tok, encoding = _cli_chat.load(o.template, o.tokenizer)
    elif o.fmt in ("responses", "gemini") or (o.fmt is None and native is not None):
        # Another API's body: its own adapter reads it (and names what is wrong with it).
        found = Detection(o.fmt, "--format") if o.fmt else Detection(native[0], "detected", [native[1]])  # type: ignore[index]
        key = "input" if found.name == "responses" else "contents"
        messages = data if bare else data.get(key) if isinstance(data, dict) else None
        if messages is None or messages == [] or messages == "":
            io.fail(f"{name}: expected a JSON object with a non-empty {key!r} (or a bare list of items)")
    else:
        key = "messages"
        messages = data if bare else data.get("messages") if isinstance(data, dict) else None
        try:
            check_supported(data, messages)
        except Refusal as e:
            io.fail(f"{name}: {e}")
        _check_shape(name, messages)
        try:
            found = detect(data, messages, o.fmt)
        except Refusal as e:
            io.fail(f"{name}: {e}")
    if template is None:
        encoding = choose_encoding(found.name, data, o.encoding)
        tok = load_tokenizer(encoding.name)
    if o.reserve is not None:
        reserve, reserve_source, note = o.reserve, "--reserve", None
    else:
        try:
            hinted, why = payload_reserve(found.name, data)
        except Refusal as e:
            io.fail(f"{name}: {e}")
        reserve = hinted if hinted is not None else 0
        reserve_source = why if hinted is not None else "none"
        note = f" from {why}" if hinted is not None else ", no max_tokens given"
    try:
        budget = Budget(o.window, reserve)
    except CtxfastError as e:
        if reserve_source in ("--reserve", "none") or reserve < o.window:
            io.fail(f"--window/--reserve: {e}")
        io.fail(f"--window {o.window:,}: the payload's {reserve_source} reserves {reserve:,} tokens for the reply, "
                "which leaves nothing for input", hint=f"raise --window above {reserve:,}, or pass a smaller --reserve")
    facts: dict[str, Any] = {
        "input": name,
        "format": {"name": found.name, "source": found.source, "signals": found.reasons},
        "count": {"encoding": encoding.name, "encoding_source": encoding.source, "kind": _count_kind(encoding.source)},
        "window": o.window,
        "reserve": reserve,
        "reserve_source": reserve_source,
    }
    header = [f"format   {describe_format(found)}", f"encoding {encoding.note}"]
    # With -o -, stdout carries the payload alone: everything else goes to stderr.
    console = io.err if o.output == "-" else io.out
    try:
        if template is not None:
            fitted_messages, result = _cli_chat.fit(data, messages, budget, policy, tok, template)
        else:
            fitted_messages, result = _adapter_fit(found.name, data, messages, budget, policy, tok)
    except Unfittable as e:
        _report_unfittable(e, o, name, console, facts, header, reserve, note)
    except CtxfastError as e:
        io.fail(f"{name}: {e}")
    output = None
    if o.output is not None:
        fitted: Any = fitted_messages if bare else {**data, key: fitted_messages}
        try:
            encoded = io.to_json_bytes(fitted)
        except (RecursionError, ValueError, TypeError) as e:
            io.fail(f"{name}: cannot write the fitted payload as JSON: {type(e).__name__}")
        io.write_output(o.output, encoded, mode)
        output = {"path": o.output, "messages": len(fitted_messages), "tokens": result.total}
    if o.quiet:
        return
    if o.as_json:
        facts["output"] = output
        io.show(console, json.dumps(fit_json(result, policy, facts), ensure_ascii=False, indent=2))
        return
    print_text(console, result, policy, header, reserve, note)
    if output is not None and o.output != "-":
        io.say(console, f"wrote {o.output} ({len(fitted_messages)} messages, {result.total:,} tokens)")


def _report_unfittable(
    e: Unfittable, o: Options, name: str, console: Any, facts: dict[str, Any], header: list[str],
    reserve: int, note: str | None,
) -> NoReturn:
    """The failed attempt's trace (when the engine gives one), then the error and a remedy."""
    trace = getattr(e, "trace", None)
    trace = trace if isinstance(trace, str) and trace.strip() else None
    if not o.quiet and o.as_json:
        failed = {"schema": SCHEMA, **facts, "output": None, "fits": False, "error": str(e),
                  "ceiling": getattr(e, "ceiling", None), "total": getattr(e, "total", None),
                  "shortfall": getattr(e, "shortfall", None), "trace_text": trace}
        io.show(console, json.dumps(failed, ensure_ascii=False, indent=2))
    # The engine's message: a first line (the shortfall), the protected parts by layer, and a
    # generic remedy. The error stays one line (the first, with the command line's own remedy);
    # the breakdown goes with the trace, where a reader at a terminal looks.
    first, *details = str(e).splitlines() or [""]
    details = [d for d in details if d.strip()]
    cut = next((k for k, d in enumerate(details) if d.startswith("to fit:")), len(details))
    details = details[:cut]
    if not o.quiet and not o.as_json:
        for line in header:
            io.say(console, line)
        if trace is not None:
            text, extra = with_reserve_note(trace, reserve, note)
            io.show(console, text.rstrip("\n"))
            if extra:
                io.say(console, extra)
        if details:
            io.show(console, "\n".join(details))
    message = first
    if not message.startswith(("cannot fit", "does not fit")):
        message = "does not fit: " + message
    io.fail(f"{name}: {message}", hint=_unfittable_hint(e, o, reserve, note or ""))
