"""Reading untrusted payload fields for the adapters: bounded depth, str JSON keys, ints within
Python's int-to-str limit, messages that never ``repr`` an unvalidated value; tool calls paired
with their results by id; and the error boundary every adapter runs inside. ``_payload`` (the
engine the adapters share) re-exports these names.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from ctxfast._errors import ArgumentTypeError, CtxfastError, InvalidArgumentError

#: The deepest nesting read in a payload field (the core's documented MAX_DEPTH).
MAX_DEPTH = 128


# ------------------------------------------------------------------------------------------------
# Reading untrusted values: bounded, never a repr of something unvalidated


def preview(value: Any, limit: int = 40) -> str:
    """A short, safe description of a value for an error message: a str or a small number is
    quoted (cut at `limit` characters), anything else is named by its type. Never a repr of a
    container, which could be deep enough to overflow the stack."""
    if isinstance(value, str):
        s = str.__str__(value)
        return repr(s) if len(s) <= limit else repr(s[:limit]) + "..."
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() <= 64:
            return int.__repr__(value)
        return f"an int of {value.bit_length()} bits"
    if isinstance(value, float):
        return float.__repr__(value)
    return f"a {type(value).__name__}"


def _step(key: Any) -> str:
    """One step of a path: ``.name`` for identifier keys, ``[3]`` for indices, else ``[...]``."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"[{preview(key)}]"
    if isinstance(key, str) and key.isidentifier() and len(key) <= 40:
        return f".{key}"
    return f"[{preview(key)}]"


def _render(where: str, chain: Any) -> str:
    """`where` plus the steps of `chain` (a linked list of (parent, step)), at most 12 shown."""
    steps: list[str] = []
    while chain is not None:
        chain, step = chain
        steps.append(step)
    steps.reverse()
    if len(steps) > 12:
        steps = [*steps[:6], "...", *steps[-5:]]
    return where + "".join(steps)


_INT_SAFE_BITS = 10_000  # well under 4,300 decimal digits: such ints always convert


def _int_ok(value: int) -> bool:
    """Whether ``str(value)`` works (Python limits int-to-str conversion, 4,300 digits by default)."""
    if value.bit_length() <= _INT_SAFE_BITS:
        return True
    try:
        int.__repr__(value)
    except ValueError:
        return False
    return True


def check_tree(value: Any, where: str, field: str = "", *, strict_json: bool) -> None:
    """Refuse a nested value that cannot be turned into text safely: more than ``MAX_DEPTH``
    levels, an int over Python's int-to-str limit, and with `strict_json` a non-str object key
    or a value that is not JSON. Errors name the path under ``where + field``.

    The walk is level by level, without recursion and without recording paths: a payload's
    fields are checked on every request, so the common case allocates little. Only when
    something is wrong does ``_explain`` walk again to find and name it."""
    t = type(value)
    if t is str or t is float or t is bool or value is None or (t is int and value.bit_length() <= _INT_SAFE_BITS):
        return
    level = [value]
    depth = 0
    while level:
        below: list[Any] = []
        for node in level:
            t = type(node)
            if t is str or t is float or t is bool or node is None:
                continue
            if t is int:
                if node.bit_length() > _INT_SAFE_BITS and not _int_ok(node):
                    _explain(value, where + field, strict_json)
                continue
            if t is dict:
                if depth >= MAX_DEPTH:
                    _explain(value, where + field, strict_json)
                for key in node:
                    if type(key) is not str:
                        if strict_json:
                            _explain(value, where + field, strict_json)
                        below.append(key)
                below.extend(node.values())
            elif t is list or t is tuple:
                if depth >= MAX_DEPTH:
                    _explain(value, where + field, strict_json)
                below.extend(node)
            else:
                # Subclasses, sets, other objects: the thorough walk decides (and names the path).
                _explain(value, where + field, strict_json)
                return
        level = below
        depth += 1


def _explain(value: Any, where: str, strict_json: bool) -> None:
    """The thorough walk: raise the error for the first problem in `value`, naming its path;
    return if there is none."""
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        node, depth, chain = stack.pop()
        if isinstance(node, str) or isinstance(node, (bool, float)) or node is None:
            continue
        if isinstance(node, int):
            if not _int_ok(node):
                raise InvalidArgumentError(
                    f"{_render(where, chain)} is an int of more than {sys.get_int_max_str_digits()} digits, "
                    "which has no text form (Python's int-to-str limit)"
                )
            continue
        container = isinstance(node, (dict, list, tuple)) or (not strict_json and isinstance(node, (set, frozenset)))
        if container and depth >= MAX_DEPTH:
            raise InvalidArgumentError(
                f"{where} is nested more than {MAX_DEPTH} levels deep; ctxfast reads at most {MAX_DEPTH}"
            )
        if isinstance(node, dict):
            children: list[tuple[Any, Any]] = []
            for key, item in node.items():
                if strict_json and not isinstance(key, str):
                    raise ArgumentTypeError(
                        f"{_render(where, chain)} has a key of type {type(key).__name__}: "
                        "JSON object keys must be str"
                    )
                if not isinstance(key, str):
                    children.append((key, (chain, "<key>")))
                children.append((item, (chain, _step(key))))
        elif container:
            children = [(item, (chain, f"[{k}]")) for k, item in enumerate(node)]
        elif strict_json:
            raise ArgumentTypeError(
                f"{_render(where, chain)} is of type {type(node).__name__}, which is not JSON "
                "(expected str, int, float, bool, None, a list or a dict)"
            )
        else:
            continue  # any other object: its own str() decides (inside boundary())
        stack.extend((item, depth + 1, sub) for item, sub in children)


def text(value: Any, where: str, field: str = "") -> str:
    """``str(value)``, as the adapters have always rendered a field, after checking that it can
    be rendered: a bounded depth and no int over Python's int-to-str limit. The path in an error
    is ``where + field`` (joined only then)."""
    if type(value) is str:
        return value
    check_tree(value, where, field, strict_json=False)
    return str(value)


def as_json(value: Any, where: str, field: str = "", **dumps: Any) -> str:
    """``json.dumps(value, **dumps)`` of a checked value: bounded depth, str keys, JSON leaves."""
    check_tree(value, where, field, strict_json=True)
    try:
        return json.dumps(value, **dumps)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"{where}{field} is not JSON-serialisable: {type(e).__name__}") from e


def sequence_arg(value: Any, name: str, what: str = "dicts") -> Sequence[Any]:
    """An optional list argument (``tools``): None is empty, a str, dict or scalar is refused."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, bytearray, dict)) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"argument '{name}' must be a list of {what} or None, not {type(value).__name__}")
    return value


# ------------------------------------------------------------------------------------------------
# Pairing tool calls and results by id


class ToolLink(NamedTuple):
    """A tool call or a tool result with an id."""

    #: The index of the message it is in.
    message: int
    #: Its path for error messages, e.g. ``"messages[2].tool_calls[0]"``.
    where: str
    id: str


def tool_id(value: Any, where: str, field: str = "") -> str | None:
    """A call or result id: a str, or None (absent: paired by position). Anything else is refused."""
    if value is None or isinstance(value, str):
        return value
    raise ArgumentTypeError(f"{where}{field} must be a str, not {type(value).__name__}")


def check_tool_pairs(
    calls: Sequence[ToolLink],
    results: Sequence[ToolLink],
    groups: Sequence[str | None],
    *,
    result_field: str,
    between: Callable[[int], str],
) -> None:
    """Refuse a payload whose results cannot be kept with their calls.

    `groups` are the exchange groups of ``assign_exchanges``; a result must be in its call's.
    `between(k)` describes message k (e.g. "a user message") when it stands between a call and
    its result. See the module docstring for why this refuses rather than merging exchanges.
    """
    if not calls:
        # No call carries an id (an old payload, or one whose calls were removed): grouping
        # stays by position alone, and results are not checked against calls.
        return
    by_id: dict[str, ToolLink] = {}
    for call in calls:
        seen = by_id.get(call.id)
        if seen is not None:
            raise InvalidArgumentError(
                f"{call.where} repeats the tool call id {preview(call.id)} of {seen.where}: each call "
                "needs its own id, so that its result can be paired with it"
            )
        by_id[call.id] = call
    answered: dict[str, ToolLink] = {}
    for result in results:
        match = by_id.get(result.id)
        if match is None or match.message >= result.message:
            later = f"; the call with that id is in {match.where}, after it" if match is not None else ""
            raise InvalidArgumentError(
                f"{_label(result, result_field)} answers no tool call: no message before it calls that "
                f"id{later}. A tool result must follow its call"
            )
        first = answered.get(result.id)
        if first is not None:
            raise InvalidArgumentError(
                f"{_label(result, result_field)} answers the call in {match.where} a second time: "
                f"{first.where} already answered it"
            )
        answered[result.id] = result
        if groups[match.message] != groups[result.message]:
            k = next(
                j
                for j in range(match.message + 1, result.message + 1)
                if groups[j] is not None and groups[j] != groups[match.message]
            )
            raise InvalidArgumentError(
                f"{_label(result, result_field)} answers the call in {match.where}, but messages[{k}] "
                f"({between(k)}) stands between them: a tool result must follow its call, with no user "
                "message or later tool call between them, so ctxfast refuses the payload rather than keep "
                "one without the other"
            )


def _label(result: ToolLink, field: str) -> str:
    return f"{result.where} ({field} {preview(result.id)})"


# ------------------------------------------------------------------------------------------------
# The adapter boundary


class Cursor:
    """What an adapter is reading, for the error ``boundary()`` raises on the unexpected:
    ``at`` is a message index, a path, or None (the payload as a whole)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: int | str | None = None

    def describe(self) -> str:
        if isinstance(self.at, int):
            return f"messages[{self.at}]"
        return self.at or "the payload"


def exception_text(e: BaseException, limit: int = 200) -> str:
    try:
        s = " ".join(str(e).split())
    except Exception:  # noqa: BLE001 - an exception whose str() fails still gets a message
        s = ""
    s = s if len(s) <= limit else s[:limit] + "..."
    return f"{type(e).__name__}: {s}" if s else type(e).__name__


@contextmanager
def boundary() -> Iterator[Cursor]:
    """Run an adapter: a CtxfastError passes as it is, anything unexpected from a malformed payload
    becomes one (``ArgumentTypeError`` for a ``TypeError``, else ``InvalidArgumentError``) naming
    what was being read. ``KeyboardInterrupt``, ``SystemExit`` and ``MemoryError`` pass through."""
    cursor = Cursor()
    try:
        yield cursor
    except (CtxfastError, MemoryError):
        raise
    except RecursionError as e:
        raise InvalidArgumentError(
            f"{cursor.describe()} is nested too deeply to read (at most {MAX_DEPTH} levels)"
        ) from e
    except TypeError as e:
        raise ArgumentTypeError(f"{cursor.describe()} is malformed: {exception_text(e)}") from e
    except Exception as e:
        raise InvalidArgumentError(f"{cursor.describe()} is malformed: {exception_text(e)}") from e
