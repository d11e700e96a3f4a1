"""What ``ctxfast fit`` prints: the trace with a header and an occupancy table, or (``--json``)
the same facts as one JSON object.

The JSON trace (``"schema": "ctxfast.fit/1"``; keys are only ever added within a schema
version):

- ``input``, ``output`` (``{"path", "messages", "tokens"}`` or null), ``fits`` (true here;
  a failed fit prints ``"fits": false`` with ``error``, ``shortfall`` and ``trace_text``);
- ``format``: ``{"name", "source" ("detected" | "--format"), "signals": [...]}``;
- ``count``: ``{"encoding", "encoding_source" ("--encoding" | "model" | "default" |
  "estimate"), "kind"}``. ``kind`` is ``"exact"`` (OpenAI, the encoding is the model's or was
  given), ``"default_encoding"`` (OpenAI, model unknown: exact only if it uses o200k_base) or
  ``"estimate"`` (Anthropic: no public tokenizer);
- ``window``, ``reserve``, ``reserve_source`` (``"--reserve"``, ``"max_tokens"``,
  ``"max_completion_tokens"`` or ``"none"``), ``ceiling``;
- ``total`` (what is sent), ``spare``, ``over_by`` (before any rung), ``count_calls``;
- ``layers``: ``[{"layer", "before", "after"}]`` in order of first appearance (display labels);
- ``cap_overruns``: ``{layer: tokens over its cap}``;
- ``rungs``: every rung of the policy in order, ``{"name", "fired", "rows"}``; a row is
  ``{"label", "messages", "action", "removed", "layer", "layer_after", "total_after",
  "over_after"}``, where ``messages`` lists the payload positions the unit covers;
- ``dropped``, ``digested``, ``truncated``: the units by action,
  ``{"label", "messages", "rung", "tokens"}`` (``tokens`` the row's ``removed``);
- ``tokens_removed``: ``{"total", "evicted_recoverable", "evicted_dispensable", "truncated",
  "digested"}`` (the fit's ledger).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rich.bar import Bar
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ctxfast import Eviction, Fit, Policy, PromptLayer, Truncation
from ctxfast._cli_io import say, show

SCHEMA = "ctxfast.fit/1"

_ALL_LAYERS = [
    PromptLayer.SYSTEM,
    PromptLayer.TOOLS,
    PromptLayer.PINNED,
    PromptLayer.CURRENT_TURN,
    PromptLayer.CONVERSATION,
    PromptLayer.TOOL_RESULT,
    PromptLayer.RETRIEVED,
    PromptLayer.SUMMARY,
]

#: A unit label in the adapters' form: ``messages[3]``, ``messages[3..6]``, ``digest of ...``.
_LABEL = re.compile(r"^(?:digest of )?messages\[(\d+)(?:\.\.(\d+))?\]$")


def labels(policy: Policy) -> dict[PromptLayer, str]:
    named = policy.to_dict().get("labels", {})
    return {layer: named.get(layer.label, layer.label) for layer in _ALL_LAYERS}


def kept_by_layer(result: Fit, names: dict[PromptLayer, str]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for seg in result.kept:
        label = names.get(seg.layer, seg.layer.label)
        sizes[label] = sizes.get(label, 0) + seg.count()
    return sizes


def occupancy(before: list[tuple[str, int]], after: dict[str, int], ceiling: int, width: int) -> Table:
    """Per-layer size before and after, each as a bar against the ceiling, within ``width``."""
    label_w = max([len("layer"), *(len(label) for label, _ in before)])
    num_w = max([len("before"), *(len(f"{n:,}") for _, n in before)])
    # Four gaps of 2 between the five columns; what is left goes to the two bars.
    bar = max(6, min(24, (width - label_w - 2 * num_w - 8) // 2))
    table = Table(title=f"occupancy (ceiling {ceiling:,})", title_justify="left", box=None, pad_edge=False)
    table.add_column("layer", no_wrap=True)
    table.add_column("before", justify="right", no_wrap=True)
    table.add_column("", width=bar, no_wrap=True)
    table.add_column("after", justify="right", no_wrap=True)
    table.add_column("", width=bar, no_wrap=True)
    for label, size in before:
        kept = after.get(label, 0)
        table.add_row(
            Text(label),
            f"{size:,}",
            Bar(size=max(ceiling, 1), begin=0, end=min(size, ceiling), color="yellow"),
            f"{kept:,}",
            Bar(size=max(ceiling, 1), begin=0, end=min(kept, ceiling), color="green"),
        )
    return table


def with_reserve_note(trace: str, reserve: int, note: str | None) -> tuple[str, str | None]:
    """The trace with its ceiling line saying where the reserve came from (``note``, e.g.
    ``" from max_tokens"``); when that line is not in the expected form, the trace unchanged
    and a line to print after it."""
    if note is None:
        return trace, None
    first, sep, rest = trace.partition("\n")
    needle = f"reserve {reserve:,})"
    if first.startswith("ceiling") and needle in first:
        return first.replace(needle, f"reserve {reserve:,}{note})", 1) + sep + rest, None
    return trace, f"reserve {reserve:,}{note}"


def print_text(console: Console, result: Fit, policy: Policy, header: list[str], reserve: int, note: str | None) -> None:
    """The header lines, the trace (its ceiling line noting the reserve's source) and the
    occupancy table."""
    for line in header:
        say(console, line)
    trace, note = with_reserve_note(result.explain(), reserve, note)
    show(console, trace.rstrip("\n"))
    if note:
        say(console, note)
    say(console, "")
    console.print(occupancy(result.trace.start, kept_by_layer(result, labels(policy)), result.ceiling, console.width))


# ----------------------------------------------------------------------------------------------
# JSON


def _parse_label(label: str) -> list[int] | None:
    m = _LABEL.match(label)
    if m is None:
        return None
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) is not None else first
    return list(range(first, last + 1)) if 0 <= last - first < 1_000_000 else None


def _index(meta: Any) -> int | None:
    value = meta.get("index") if isinstance(meta, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _names(seg: Any, label: str) -> bool:
    """Whether a trace label (group, else key, else ``#position``) names this segment."""
    index = _index(seg.meta)
    return label in (seg.group, seg.key) or (index is not None and label == f"#{index}")


def _truncated_at(label: str, rung: str, truncated: list[Truncation], evicted: Sequence[Eviction],
                  used: set[int]) -> list[int]:
    """The position of the body a truncate row shortened: a still-sent truncation of that rung,
    else an evicted segment that left shorter than it was given (truncated, then dropped)."""
    for k, t in enumerate(truncated):
        if t.rung == rung and _names(t.original, label):
            index = _index(truncated.pop(k).original.meta)
            return [index] if index is not None else []
    for k, e in enumerate(evicted):
        if k not in used and _names(e.segment, label) and e.tokens < e.segment.count():
            used.add(k)
            index = _index(e.segment.meta)
            return [index] if index is not None else []
    return []


def row_messages(rows: Sequence[dict[str, Any]], evicted: Sequence[Eviction], truncated: Sequence[Truncation]) -> list[list[int]]:
    """The payload positions each trace row covers, parallel to ``rows``.

    The label says it when the adapters name units by position (``messages[3..6]``).
    Otherwise the positions come from the segments themselves (each carries its message's
    index in ``meta``): ``Fit.evicted`` lists a dropped or digested unit's segments in the
    trace's order; a truncated body is in ``Fit.truncated``, or, if a later rung dropped it,
    among the evictions, smaller than it was given."""
    out: list[list[int]] = []
    at = 0
    covered: dict[str, list[int]] = {}  # digest record group -> the positions it summarises
    pending = list(truncated)
    used: set[int] = set()
    for row in rows:
        label = str(row.get("label", ""))
        parsed = _parse_label(label)
        found: list[int] = []
        if row.get("action") in ("drop", "digest") and at < len(evicted):
            first = evicted[at]
            unit = [first]
            at += 1
            group = first.segment.group
            while group is not None and at < len(evicted):
                e = evicted[at]
                if e.rung != first.rung or e.action != first.action or e.segment.group != group:
                    break
                unit.append(e)
                at += 1
            for e in unit:
                meta = e.segment.meta
                index = _index(meta)
                if index is not None:
                    found.append(index)
                elif isinstance(meta, dict) and "digest_of" in meta and group is not None:
                    found += covered.get(group, [])
            if row.get("action") == "digest" and group is not None:
                covered[group] = sorted(set(found))
        elif row.get("action") == "truncate" and parsed is None:
            found = _truncated_at(label, str(row.get("rung")), pending, evicted, used)
        out.append(parsed if parsed is not None else sorted(set(found)))
    return out


def fit_json(result: Fit, policy: Policy, facts: dict[str, Any]) -> dict[str, Any]:
    """The JSON trace of a fit; ``facts`` holds the keys the fit cannot know (input, format,
    count, window, reserve, output)."""
    names = labels(policy)
    after = kept_by_layer(result, names)
    rows = [dict(r) for r in result.trace.rows]
    positions = row_messages(rows, result.evicted, result.truncated)
    keys = ("action", "removed", "layer", "layer_after", "total_after", "over_after")
    shaped = [
        {"label": r.get("label"), "messages": p, **{k: r.get(k) for k in keys}, "rung": r.get("rung")}
        for r, p in zip(rows, positions)
    ]
    rungs = [
        {"name": name, "fired": any(r["rung"] == name for r in shaped),
         "rows": [{k: v for k, v in r.items() if k != "rung"} for r in shaped if r["rung"] == name]}
        for name in policy.rung_names
    ]
    by_action: dict[str, list[dict[str, Any]]] = {"drop": [], "digest": [], "truncate": []}
    for r in shaped:
        by_action.setdefault(str(r["action"]), []).append(
            {"label": r["label"], "messages": r["messages"], "rung": r["rung"], "tokens": r["removed"]}
        )
    ledger = result.ledger
    return {
        "schema": SCHEMA,
        **facts,
        "fits": True,
        "ceiling": result.ceiling,
        "total": result.total,
        "spare": result.spare,
        "over_by": result.over_by,
        "count_calls": result.count_calls,
        "layers": [{"layer": label, "before": n, "after": after.get(label, 0)} for label, n in result.trace.start],
        "cap_overruns": {names.get(layer, layer.label): n for layer, n in result.cap_overruns.items()},
        "rungs": rungs,
        "dropped": by_action["drop"],
        "digested": by_action["digest"],
        "truncated": by_action["truncate"],
        "tokens_removed": {
            "total": ledger.removed,
            "evicted_recoverable": ledger.evicted_recoverable,
            "evicted_dispensable": ledger.evicted_dispensable,
            "truncated": ledger.truncated,
            "digested": ledger.digested,
        },
    }
