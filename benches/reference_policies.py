"""A plain-Python reference of ctxfast's eviction ladder, for the fit benchmarks.

Same semantics as the Rust core (``rust/engine/ladder.rs``, ``rank.rs``, ``presets.rs``):

1. Count every unit once (``len(tiktoken.encode_ordinary(text))``), unless the caller passes the
   counts or the item carries ``tokens``.
2. Build eviction units: items sharing a ``group`` are one unit (positioned at its first member);
   a unit is protected when any member's layer is protected, recoverable/stale only when every
   member is, scored by its best member, and an "exchange" when it holds a CONVERSATION item.
3. Project the total as the sum of the counts. Run the rungs in order; each rung takes the alive,
   unprotected units it can reach, sets aside its floors (first/last N exchanges, top N by
   score), filters, sorts once by its order, and removes units one at a time, subtracting the
   unit's known size, until the total is at or under the ceiling. No rung re-counts anything.
4. Stop at the first fit. If every rung is spent and it still does not fit: ``Unfittable``.
5. One authoritative count of the payload: the sum of the kept counts (bare segments, no
   separator), so ``count_calls == 1``.

Only the ``truncate`` action counts new text (the shortened body, once). ``digest`` and the
``separator=`` payload are not implemented here (the built-in presets use neither).

Items are any objects with ``text``, ``layer`` (a layer name), ``key``, ``score``, ``tokens``,
``recoverable``, ``stale``, ``group``, ``level`` and ``covers`` (``session.Part`` has them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

LAYERS = ("system", "tools", "pinned", "current_turn", "conversation", "tool_result", "retrieved", "summary")
PROTECTED = frozenset({"system", "tools", "pinned", "current_turn"})
HISTORY = frozenset({"conversation", "tool_result", "summary"})
ORDERS = ("oldest", "newest", "lowest_score", "largest", "rank")


# ---- policies as data -------------------------------------------------------------------------


@dataclass(frozen=True)
class Floor:
    keep_first: int = 0  # first N exchanges
    keep_last: int = 0  # last N exchanges
    keep_top: int = 0  # N best-scored units
    min_tokens: int = 0  # stop before the rung's layers hold fewer tokens than this


@dataclass(frozen=True)
class Rung:
    name: str
    layers: frozenset[str]
    order: str
    action: str = "drop"  # drop | truncate
    min_tokens: int = 128  # truncate: never shorten a body below this
    filter: str | None = None  # None | stale | recoverable | covered | level:N
    floor: Floor = Floor()


@dataclass(frozen=True)
class Policy:
    name: str
    rungs: tuple[Rung, ...]
    protected: frozenset[str] = PROTECTED
    labels: tuple[tuple[str, str], ...] = ()

    def label(self, layer: str) -> str:
        return dict(self.labels).get(layer, layer)


def context_window() -> Policy:
    return Policy("context_window", (
        Rung("conversation.oldest_first", HISTORY, "oldest"),
        Rung("retrieved.lowest_score_first", frozenset({"retrieved"}), "lowest_score"),
    ))


def troubleshooting() -> Policy:
    return Policy("troubleshooting", (
        Rung("history.drop_oldest_exchange", HISTORY, "oldest", floor=Floor(keep_first=1, keep_last=3)),
        Rung("retrieval.drop_lowest_ranked_chunk", frozenset({"retrieved"}), "lowest_score", floor=Floor(keep_top=4)),
        Rung("retrieval.truncate_chunk_bodies", frozenset({"retrieved"}), "lowest_score", action="truncate", min_tokens=128),
    ), labels=tuple(sorted([(layer, "history") for layer in HISTORY] + [("retrieved", "retrieval")])))


def seven_tier(top_k: int = 3) -> Policy:
    return Policy("seven_tier", (
        Rung("stale_tool_results", frozenset({"tool_result"}), "oldest", filter="stale"),
        Rung("retrieved_below_top_k", frozenset({"retrieved"}), "lowest_score", floor=Floor(keep_top=top_k)),
        Rung("covered_level1_summaries", frozenset({"summary"}), "oldest", filter="covered"),
        Rung("rolling_summary", frozenset({"summary"}), "oldest", filter="level:0"),
        # Turns (with their tool results); a live tool result outside any turn goes last.
        Rung("recent_turns", frozenset({"conversation"}), "oldest"),
        Rung("unconsumed_tool_results", frozenset({"tool_result"}), "oldest"),
    ))


def ranked(keep_last: int = 2) -> Policy:
    return Policy("ranked", (
        Rung("ranked", frozenset({"conversation", "tool_result", "retrieved", "summary"}), "rank",
             floor=Floor(keep_last=keep_last)),
    ))


PRESETS = {"context_window": context_window, "troubleshooting": troubleshooting,
           "seven_tier": seven_tier, "ranked": ranked}


def from_dict(d: dict[str, Any]) -> Policy:
    """A policy from ``ctxfast.Policy.to_dict()``'s shape (so the two can be checked equal)."""
    rungs = []
    for r in d["rungs"]:
        fl = r.get("floor") or {}
        rungs.append(Rung(
            name=r["name"], layers=frozenset(r["layers"]), order=r["order"], action=r.get("action", "drop"),
            min_tokens=r.get("min_tokens", 128), filter=r.get("filter"),
            floor=Floor(**{k: fl.get(k, 0) for k in ("keep_first", "keep_last", "keep_top", "min_tokens")}),
        ))
    labels = tuple(sorted((d.get("labels") or {}).items()))
    return Policy(d.get("name") or "", tuple(rungs), frozenset(d.get("protected", PROTECTED)), labels)


# ---- counting -----------------------------------------------------------------------------------


class TiktokenCounter:
    """``len(encode_ordinary(text))``, one call per unit; counts its invocations and texts."""

    def __init__(self, encoding: Any) -> None:
        self.enc = encoding
        self.calls = 0  # invocations of tiktoken
        self.units = 0  # texts tokenized

    def count(self, text: str) -> int:
        self.calls += 1
        self.units += 1
        return len(self.enc.encode_ordinary(text))

    def count_all(self, texts: Sequence[str]) -> list[int]:
        self.calls += len(texts)
        self.units += len(texts)
        encode = self.enc.encode_ordinary
        return [len(encode(t)) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix ending on a token and a character boundary that counts <= max_tokens."""
        self.calls += 1
        self.units += 1
        ids = self.enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        raw = text.encode("utf-8")
        ends, end = [], 0
        for i in ids[:max_tokens]:
            end += len(self.enc.decode_single_token_bytes(i))
            ends.append(end)
        for k in range(max_tokens, 0, -1):
            e = ends[k - 1]
            if e == len(raw) or (e < len(raw) and (raw[e] & 0xC0) != 0x80):
                prefix = raw[:e].decode("utf-8")
                self.calls += 1
                self.units += 1
                if len(self.enc.encode_ordinary(prefix)) <= max_tokens:
                    return prefix
        return ""


class BatchTiktokenCounter(TiktokenCounter):
    """Same counts, the units tokenized with ``encode_ordinary_batch`` (tiktoken's thread pool)."""

    def count_all(self, texts: Sequence[str]) -> list[int]:
        self.calls += 1
        self.units += len(texts)
        return [len(ids) for ids in self.enc.encode_ordinary_batch(list(texts))]


# ---- the ladder ----------------------------------------------------------------------------------


class Unfittable(Exception):
    def __init__(self, components: list[tuple[str, int]], floor_tokens: int, ceiling: int, total: int) -> None:
        self.components = components
        self.floor_tokens = floor_tokens
        self.ceiling = ceiling
        self.total = total
        self.shortfall = max(total - ceiling, 0)
        parts = ", ".join(f"{label} {n:,}" for label, n in components) or "empty"
        floors = f" + {floor_tokens:,} kept by floors" if floor_tokens else ""
        super().__init__(f"cannot fit: the protected set ({parts}){floors} leaves {total:,} tokens "
                         f"against a ceiling of {ceiling:,}; short by {self.shortfall:,}")


@dataclass
class Result:
    kept: list[int]  # item indices, input order
    evicted: list[tuple[int, str, int]]  # (item index, rung name, tokens), removal order
    truncated: list[tuple[int, int, int]]  # (item index, tokens before, tokens after)
    texts: dict[int, str]  # shortened texts of truncated items
    total: int
    ceiling: int
    over_by: int
    rungs_fired: list[str]
    count_calls: int = 1
    tokenizer_calls: int = 0
    counts: list[int] = field(default_factory=list)


class _Unit:
    __slots__ = ("members", "label", "position", "protected", "layers", "recoverable", "stale", "score",
                 "exchange", "alive")

    def __init__(self, position: int, label: str) -> None:
        self.members: list[int] = []
        self.label = label
        self.position = position
        self.protected = False
        self.layers: set[str] = set()
        self.recoverable = True
        self.stale = True
        self.score = float("-inf")
        self.exchange = False
        self.alive = True


def _build_units(items: Sequence[Any], protected: frozenset[str]) -> list[_Unit]:
    units: list[_Unit] = []
    by_group: dict[str, _Unit] = {}
    for i, it in enumerate(items):
        g = it.group
        u = by_group.get(g) if g is not None else None
        if u is None:
            u = _Unit(i, g if g is not None else (it.key if it.key is not None else f"#{i}"))
            units.append(u)
            if g is not None:
                by_group[g] = u
        layer = it.layer
        u.members.append(i)
        u.layers.add(layer)
        if layer in protected:
            u.protected = True
        if not it.recoverable:
            u.recoverable = False
        if not it.stale:
            u.stale = False
        if it.score > u.score:
            u.score = it.score
        if layer == "conversation":
            u.exchange = True
    return units


class _Ladder:
    def __init__(self, items: Sequence[Any], counts: list[int], ceiling: int, policy: Policy, counter: Any) -> None:
        self.items = items
        self.policy = policy
        self.counter = counter
        self.ceiling = ceiling
        self.units = _build_units(items, policy.protected)
        self.tokens = list(counts)
        self.alive = [True] * len(items)
        self.texts: dict[int, str] = {}
        self.sum = sum(counts)
        self.evicted: list[tuple[int, str, int]] = []
        self.truncated: dict[int, list[int]] = {}  # index -> [before, after], first-touch order
        self.rungs_fired: list[str] = []

    def unit_tokens(self, u: _Unit) -> int:
        tokens, alive = self.tokens, self.alive
        return sum(tokens[m] for m in u.members if alive[m])

    def sort_key(self, order: str):
        if order == "oldest":
            return lambda u: u.position
        if order == "newest":
            return lambda u: -u.position
        if order == "lowest_score":
            return lambda u: (u.score, u.position)
        if order == "largest":
            return lambda u: (-self.unit_tokens(u), u.position)
        if order == "rank":  # recoverable first, stale first, lowest relevance, largest, position
            return lambda u: (not u.recoverable, not u.stale, u.score, -self.unit_tokens(u), u.position)
        raise ValueError(f"unknown order {order!r}")

    def passes(self, u: _Unit, flt: str | None, covered: set[str]) -> bool:
        if flt is None:
            return True
        if flt == "stale":
            return u.stale
        if flt == "recoverable":
            return u.recoverable
        if flt == "covered":
            return any(self.items[m].level == 1 and self.items[m].key in covered for m in u.members)
        if flt.startswith("level:"):
            n = int(flt.split(":", 1)[1])
            return any(self.items[m].level == n for m in u.members)
        raise ValueError(f"unknown filter {flt!r}")

    def drop(self, u: _Unit, rung: Rung) -> None:
        u.alive = False
        for m in u.members:
            if self.alive[m]:
                self.alive[m] = False
                t = self.tokens[m]
                self.sum -= t
                self.evicted.append((m, rung.name, t))

    def truncate(self, u: _Unit, rung: Rung) -> bool:
        body = [m for m in u.members if self.alive[m] and self.items[m].layer in rung.layers]
        if not body:
            return False
        m = max(body, key=lambda i: (self.tokens[i], -i))  # largest body, first on ties
        before = self.tokens[m]
        over = max(self.sum - self.ceiling, 0)
        if before <= rung.min_tokens or over == 0:
            return False
        # a caller-given count may cover more than the text (message framing): that overhead
        # stays with the shortened body
        given = self.items[m].tokens
        overhead = max(given - self.counter.count(self.items[m].text), 0) if given is not None else 0
        target = max(max(before - over, rung.min_tokens) - overhead, 0)
        cut = self.counter.truncate(self.texts.get(m, self.items[m].text), target)
        after = self.counter.count(cut) + overhead
        if after >= before:
            return False
        self.tokens[m] = after
        self.texts[m] = cut
        self.sum -= before - after
        if m in self.truncated:
            self.truncated[m][1] = after
        else:
            self.truncated[m] = [before, after]
        return True

    def run_rung(self, rung: Rung) -> None:
        eligible = [u for u in self.units if u.alive and not u.protected and not u.layers.isdisjoint(rung.layers)]
        fl = rung.floor
        kept_by_floor: set[int] = set()  # unit positions
        if fl.keep_first or fl.keep_last:
            exchanges = [u for u in eligible if u.exchange]
            kept_by_floor.update(u.position for u in exchanges[: fl.keep_first])
            if fl.keep_last:
                kept_by_floor.update(u.position for u in exchanges[-fl.keep_last:])
        if fl.keep_top:
            best = sorted(eligible, key=lambda u: (-u.score, u.position))
            kept_by_floor.update(u.position for u in best[: fl.keep_top])
        covered: set[str] = set()
        if rung.filter == "covered":
            for i, it in enumerate(self.items):
                if self.alive[i] and it.level == 2:
                    covered.update(it.covers)
        candidates = [u for u in eligible if u.position not in kept_by_floor and self.passes(u, rung.filter, covered)]
        candidates.sort(key=self.sort_key(rung.order))

        rung_tokens = sum(self.unit_tokens(u) for u in eligible) if fl.min_tokens else 0
        fired = False
        for u in candidates:
            if self.sum <= self.ceiling:
                break
            if rung.action == "drop":
                size = self.unit_tokens(u)
                if fl.min_tokens and max(rung_tokens - size, 0) < fl.min_tokens:
                    break
                self.drop(u, rung)
                rung_tokens = max(rung_tokens - size, 0)
                fired = True
            elif rung.action == "truncate":
                before = self.unit_tokens(u) if fl.min_tokens else 0
                if self.truncate(u, rung):
                    if fl.min_tokens:
                        rung_tokens = max(rung_tokens - max(before - self.unit_tokens(u), 0), 0)
                    fired = True
            else:
                raise NotImplementedError(f"action {rung.action!r} is not in the reference")
        if fired and rung.name not in self.rungs_fired:
            self.rungs_fired.append(rung.name)

    def unfittable(self) -> Unfittable:
        components = []
        for u in self.units:
            if u.alive and u.protected:
                for m in u.members:
                    if self.alive[m]:
                        it = self.items[m]
                        label = self.policy.label(it.layer)
                        components.append((label if it.key is None else f'{label} "{it.key}"', self.tokens[m]))
        protected_tokens = sum(n for _, n in components)
        return Unfittable(components, max(self.sum - protected_tokens, 0), self.ceiling, self.sum)


def fit(
    items: Sequence[Any],
    ceiling: int,
    policy: Policy | str = "context_window",
    *,
    counts: Sequence[int] | None = None,
    counter: TiktokenCounter | None = None,
) -> Result:
    """Fit ``items`` under ``ceiling`` tokens by ``policy``; see the module docstring."""
    if isinstance(policy, str):
        policy = PRESETS[policy]()
    calls_before = counter.calls if counter is not None else 0
    if counts is None:
        if counter is None:
            raise ValueError("pass counts= or a counter=")
        known = [it.tokens for it in items]
        missing = [i for i, t in enumerate(known) if t is None]
        got = counter.count_all([items[i].text for i in missing])
        counts = known
        for i, n in zip(missing, got):
            counts[i] = n
    lad = _Ladder(items, list(counts), ceiling, policy, counter)
    start_total = lad.sum
    nxt = 0
    while lad.sum > ceiling and nxt < len(policy.rungs):
        lad.run_rung(policy.rungs[nxt])
        if lad.sum > ceiling:
            nxt += 1
    if lad.sum > ceiling:
        raise lad.unfittable()
    return Result(
        kept=[i for i, a in enumerate(lad.alive) if a],
        evicted=lad.evicted,
        truncated=[(i, b, a) for i, (b, a) in lad.truncated.items()],
        texts=lad.texts,
        total=lad.sum,  # the one authoritative count: the kept units' sum
        ceiling=ceiling,
        over_by=max(start_total - ceiling, 0),
        rungs_fired=lad.rungs_fired,
        count_calls=1,
        tokenizer_calls=(counter.calls - calls_before) if counter is not None else 0,
        counts=lad.tokens,
    )


def layer_sizes(items: Iterable[Any], counts: Iterable[int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for it, n in zip(items, counts):
        out[it.layer] = out.get(it.layer, 0) + n
    return out
