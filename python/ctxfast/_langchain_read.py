"""How ``ctxfast.langchain`` reads one LangChain message: its text pieces (with their paths, for a
truncate rung), its longest piece, its ``name`` as ChatOpenAI sends it, its tool calls; and the
copy of a message with one piece shortened. Every field is read safely (``_payload.text``)."""

from __future__ import annotations

from typing import Any

from ctxfast import _payload
from ctxfast._errors import ArgumentTypeError
from ctxfast._payload import Origin, Where
from ctxfast._rounds import replace_at


def _pieces(content: Any, where: str, origins: list[Where] | None = None) -> list[tuple[tuple[Any, ...], str]]:
    """A message's text pieces with their paths from the message (its str content, or each str
    item and text block of its content list); with `origins`, where each came from is appended
    to it (only to word an error)."""
    if isinstance(content, str):
        if origins is not None:
            origins.append(Origin(f"{where}.content"))
        return [(("content",), content)]
    pieces: list[tuple[tuple[Any, ...], str]] = []
    if isinstance(content, list):
        for j, block in enumerate(content):
            if isinstance(block, str):
                path: tuple[Any, ...] = ("content", j)
                piece = block
            elif isinstance(block, dict) and block.get("type") == "text":
                path = ("content", j, "text")
                piece = _payload.text(block.get("text", ""), where, f".content[{j}].text")
            else:
                continue
            if origins is not None:
                origins.append(Origin(where + "".join(_payload._step(k) for k in path)))
            pieces.append((path, piece))
    return pieces


def _longest(pieces: list[tuple[tuple[Any, ...], str]]) -> tuple[tuple[Any, ...] | None, str]:
    best: tuple[tuple[Any, ...] | None, str] = (None, "")
    for path, piece in pieces:
        if best[0] is None or len(piece) > len(best[1]):
            best = (path, piece)
    return best


def _with_text(m: Any, path: tuple[Any, ...], text: str) -> Any:
    """A copy of LangChain message `m` with the piece at `path` shortened to `text`."""
    return m.model_copy(update={"content": replace_at(m.content, path[1:], text)})


def _name(m: Any, where: str) -> str:
    """A message's ``name`` as ChatOpenAI sends it ("" when unset), read safely. A
    ``ToolMessage``'s name is not sent (langchain-openai keeps only content, role and
    tool_call_id for a tool message), so it is not counted."""
    name = getattr(m, "name", None) if getattr(m, "type", None) != "tool" else None
    return _payload.text(name, where, ".name") if name else ""


def _calls(m: Any, where: str) -> list[tuple[str, str, Any]]:
    """A message's tool calls as (name, args text, id), each field read safely."""
    calls = getattr(m, "tool_calls", None) or ()
    if not isinstance(calls, (list, tuple)):
        raise ArgumentTypeError(f"{where}.tool_calls must be a list, not {type(calls).__name__}")
    out = []
    for k, c in enumerate(calls):
        at = f"{where}.tool_calls[{k}]"
        if not isinstance(c, dict):
            raise ArgumentTypeError(f"{at} must be a dict, not {type(c).__name__}")
        out.append((_payload.text(c.get("name", ""), at, ".name"), _payload.text(c.get("args", ""), at, ".args"), c.get("id")))
    return out
