"""Reading Anthropic content blocks: what each known block type costs, and each message's one
truncatable string. ``ctxfast.anthropic`` documents the rules; this module applies them."""

from __future__ import annotations

from typing import Any

from ctxfast import _payload, _shapes
from ctxfast._errors import ArgumentTypeError
from ctxfast._payload import Origin, Where

#: Images, and documents that are not plain text (PDFs), as an estimate.
IMAGE_TOKENS = 1600
#: Blocks whose cost is their name and JSON input (``tool_use`` and the server-side calls).
CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
#: Server-side results and uploads, counted by their JSON text (an estimate).
JSON_BLOCKS = frozenset({
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_result",
    "container_upload",
})
#: Every block type a message may hold.
BLOCK_TYPES = (
    "text", "image", "document", "search_result", "tool_use", "tool_result", "thinking", "redacted_thinking",
    *sorted(CALL_BLOCKS - {"tool_use"}), *sorted(JSON_BLOCKS),
)
#: The block types a ``tool_result``'s content may hold.
RESULT_BLOCK_TYPES = ("text", "image", "document", "search_result")

#: A message's truncatable string: its path from the message, and the string.
Main = tuple[tuple[Any, ...], str]


def blocks(content: Any, where: str) -> list[dict[str, Any]]:
    """A message's content as blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        for j, b in enumerate(content):
            if not isinstance(b, dict) or "type" not in b:
                raise ArgumentTypeError(f"{where}.content[{j}] must be a content block dict with a 'type'")
        return content
    raise ArgumentTypeError(f"{where}.content must be a str or a list of blocks, not {type(content).__name__}")


def _str(value: Any, where: str, field: str) -> str:
    return value if type(value) is str else _payload.text(value, where, field)


def _strings_of(block: dict[str, Any], where: str, keys: tuple[str, ...], origins: list[Where] | None) -> list[str]:
    """The str fields `keys` of a block that are present (a title, a source...)."""
    out = []
    for key in keys:
        if block.get(key):
            out.append(_str(block[key], where, f".{key}"))
            if origins is not None:
                origins.append(Origin(f"{where}.{key}"))
    return out


def _text_blocks(inner: Any, where: str, origins: list[Where] | None) -> tuple[list[str], int]:
    """The text and image cost of a list of text/image blocks (a search result's or a document's)."""
    if isinstance(inner, str):
        if origins is not None:
            origins.append(Origin(f"{where}.content"))
        return [inner], 0
    if not isinstance(inner, list):
        raise ArgumentTypeError(f"{where}.content must be a str or a list of blocks, not {type(inner).__name__}")
    strings: list[str] = []
    extra = 0
    for k, b in enumerate(inner):
        at = f"{where}.content[{k}]"
        if not isinstance(b, dict) or b.get("type") not in ("text", "image"):
            raise ArgumentTypeError(f"{at} must be a text or image block")
        if b["type"] == "image":
            extra += IMAGE_TOKENS
            continue
        strings.append(_str(b.get("text", ""), at, ".text"))
        if origins is not None:
            origins.append(Origin(f"{at}.text"))
    return strings, extra


def block_strings(
    block: dict[str, Any], where: str, origins: list[Where] | None = None, *, inside_result: bool = False
) -> tuple[list[str], int]:
    """A block's strings and the tokens of its non-text content; with `origins`, where each
    string came from is appended to it (only to word an error)."""
    kind = block["type"]
    if inside_result and kind not in RESULT_BLOCK_TYPES:
        raise _shapes.unknown_part(block, where, RESULT_BLOCK_TYPES, "tool_result content block")
    if kind == "text":
        if origins is not None:
            origins.append(Origin(f"{where}.text"))
        return [_str(block.get("text", ""), where, ".text")], 0
    if kind in CALL_BLOCKS:
        name = _str(block.get("name", ""), where, ".name")
        if origins is not None:
            origins += [Origin(f"{where}.name"), Origin(f"{where}.input")]
        return [name, _payload.as_json(block.get("input", {}), where, ".input", sort_keys=True)], 0
    if kind == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, str):
            if origins is not None:
                origins.append(Origin(f"{where}.content"))
            return [inner], 0
        if not isinstance(inner, list):
            raise ArgumentTypeError(f"{where}.content must be a str or a list of blocks, not {type(inner).__name__}")
        strings: list[str] = []
        extra = 0
        for k, b in enumerate(inner):
            if not isinstance(b, dict) or "type" not in b:
                raise ArgumentTypeError(f"{where}.content[{k}] must be a content block dict with a 'type'")
            s, e = block_strings(b, f"{where}.content[{k}]", origins, inside_result=True)
            strings += s
            extra += e
        return strings, extra
    if kind == "image":
        return [], IMAGE_TOKENS
    if kind == "document":
        strings = _strings_of(block, where, ("title", "context"), origins)
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "text":
            strings.append(_str(source.get("data", ""), where, ".source.data"))
            if origins is not None:
                origins.append(Origin(f"{where}.source.data"))
            return strings, 0
        if isinstance(source, dict) and source.get("type") == "content":
            s, e = _text_blocks(source.get("content", []), f"{where}.source", origins)
            return strings + s, e
        return strings, IMAGE_TOKENS
    if kind == "search_result":
        strings = _strings_of(block, where, ("title", "source"), origins)
        s, e = _text_blocks(block.get("content", []), where, origins)
        return strings + s, e
    if kind in ("thinking", "redacted_thinking"):
        # Earlier turns' thinking blocks are not counted by the API.
        return [], 0
    if kind in JSON_BLOCKS:
        if origins is not None:
            origins.append(Origin(where))
        return [_payload.as_json(block, where, sort_keys=True)], 0
    raise _shapes.unknown_part(block, where, BLOCK_TYPES, "content block")


def longest_text(content: Any, items: list[dict[str, Any]]) -> Main | None:
    """The message's truncatable string: its longest text block, ``tool_result`` string content
    or text block inside a ``tool_result`` (the first of equal length), with its path."""
    if isinstance(content, str):
        return ("content",), content
    best: Main | None = None

    def offer(path: tuple[Any, ...], value: Any) -> None:
        nonlocal best
        if type(value) is str and (best is None or len(value) > len(best[1])):
            best = (path, value)

    for j, b in enumerate(items):
        kind = b["type"]
        if kind == "text":
            offer(("content", j, "text"), b.get("text", ""))
        elif kind == "tool_result":
            inner = b.get("content", "")
            if isinstance(inner, str):
                offer(("content", j, "content"), inner)
            else:
                for k, sub in enumerate(inner):
                    if sub.get("type") == "text":
                        offer(("content", j, "content", k, "text"), sub.get("text", ""))
    return best


def system_text(system: Any) -> tuple[str, Where]:
    """The system prompt's text, and where each of its pieces came from."""
    if system is None:
        return "", Origin("system")
    if isinstance(system, str):
        return system, Origin("system")
    if isinstance(system, list):
        pieces: list[str] = []
        origins: list[Origin] = []
        at = 0
        for j, b in enumerate(system):
            if not isinstance(b, dict):
                raise ArgumentTypeError(f"system[{j}] must be a text block dict, not {type(b).__name__}")
            piece = _payload.text(b.get("text", ""), f"system[{j}].text")
            origins.append(Origin(f"system[{j}].text", j, at))
            pieces.append(piece)
            at += len(piece) + 1
        return "\n".join(pieces), tuple(origins) or Origin("system")
    raise ArgumentTypeError(f"argument 'system' must be a str, a list of text blocks or None, not {type(system).__name__}")
