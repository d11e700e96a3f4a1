#!/usr/bin/env python
"""Run the eviction-engine benchmarks and print a Markdown report with the targets checked.

    python benches/report_fit.py                  # full run (~4-6 min), table on stdout
    python benches/report_fit.py --json out.json  # keep pytest-benchmark's JSON
    python benches/report_fit.py --from-json out.json   # re-print a report without re-running
    python benches/report_fit.py --strict         # exit 1 when a target is missed

"× ctxfast" is the contender's median divided by the ctxfast row of its group (2.00 = ctxfast
took half the time). "interleaved" is the same ratio measured a second way (the two contenders
alternating round by round, median of per-round ratios; ``test_paired_*``), less exposed to the
machine drifting between rows. A target is met on a row when the median ratio reaches it.
pytest's own output goes to stderr.
"""

from __future__ import annotations

import os
from pathlib import Path

import reporting
from reporting import fmt_ratio, fmt_time

HERE = Path(__file__).resolve().parent
BENCH_FILE = HERE / "test_bench_fit.py"

TARGETS = {  # scenario -> (targeted contender, minimum ratio over ctxfast)
    "warm-10k": ("reference", 10.0),
    "scratch": ("reference", 1.5),
    "langchain": ("langchain", 100.0),
}
SCENARIO_TITLES = {
    "warm-10k": "Warm fit, ~10,000 segments (counts known; second call on the same Segments)",
    "warm-t60": "Warm fit, turn 60 (719 segments) — for scale, no target",
    "scratch": "Full fit from scratch, turn 60 (new Segments + new tokenizer cache every round)",
    "langchain": "Turn 60 vs LangChain `trim_messages` and the naive loop (default policy)",
}
CEILING_ORDER = [4_000, 8_000, 32_000, 128_000]


def count_calls(e: dict) -> str:
    c = e["contender"]
    if c.startswith("ctxfast"):
        return f"fit.count_calls={e.get('count_calls', 0)}, cache misses={e.get('cache_misses', 0):,}"
    if c.startswith("reference"):
        units = e.get("units_tokenized", e.get("tokenizer_calls", 0))
        return f"tiktoken calls={e.get('tokenizer_calls', 0):,} ({units:,} texts)"
    if c.startswith("langchain"):
        return (f"counter calls={e.get('counter_calls', 0)}, messages counted={e.get('messages_counted', 0):,}, "
                f"texts tokenized={e.get('texts_tokenized', 0):,}")
    return f"count(everything) calls={e.get('counter_calls', 0)}, texts tokenized={e.get('texts_tokenized', 0):,}"


def outcome(e: dict) -> str:
    s = e.get("outcome", "")
    if s == "unfittable":
        s = "Unfittable raised"
    note = e.get("note")
    return f"{s} ({note})" if note else s


def load(e: dict) -> str:
    """Cores' worth of CPU other processes used during the row (conftest's cpuload), if known."""
    others = e.get("cpu_others")
    return "" if others is None else f"{others:.2f}"


def build_report(data: dict) -> tuple[str, list[tuple[str, bool]]]:
    groups: dict[str, list[dict]] = {}
    for b in data["benchmarks"]:
        if b["group"].startswith("fit-"):
            groups.setdefault(b["group"], []).append(b)
    paired = {k: v for k, v in (data.get("ctxfast_paired") or {}).items() if k.startswith("fit/")}

    # scenario -> list of (policy, ceiling, group rows)
    by_scenario: dict[str, list[tuple[str, int, list[dict]]]] = {}
    for rows in groups.values():
        e = rows[0]["extra_info"]
        by_scenario.setdefault(e["scenario"], []).append((e.get("policy", "context_window"), e["ceiling"], rows))

    lines: list[str] = []
    verdicts: list[tuple[str, bool]] = []
    mi = data.get("machine_info", {})
    lines.append("## ctxfast eviction engine — benchmark report")
    lines.append("")
    lines.append(f"Machine: {mi.get('cpu', {}).get('brand_raw', '?')}, {os.cpu_count()} cores visible, "
                 f"Python {mi.get('python_version', '?')}; {data.get('datetime', '')}. "
                 "Medians of fixed rounds; ratios are the peer's median over the ctxfast row's median; "
                 "\"other load\" = cores' worth of CPU used by other processes during the row.")
    lines.append("")
    summary: dict[str, list[tuple[float, bool, str]]] = {}
    for scenario in ["warm-10k", "warm-t60", "scratch", "langchain"]:
        cases = by_scenario.get(scenario)
        if not cases:
            continue
        cases.sort(key=lambda c: (c[0], CEILING_ORDER.index(c[1]) if c[1] in CEILING_ORDER else c[1]))
        target = TARGETS.get(scenario)
        e0 = cases[0][2][0]["extra_info"]
        size = f"{e0['segments']:,} segments" if "segments" in e0 else ""
        lines.append(f"### {SCENARIO_TITLES[scenario]}" + (f" — {size}" if size and scenario == "warm-10k" else ""))
        lines.append("")
        tcol = f"≥{target[1]:g}× ({target[0]})" if target else "target"
        lines.append(f"| policy | ceiling | contender | outcome | median | × ctxfast | interleaved | count calls | other load | {tcol} |")
        lines.append("|---|---:|---|---|---:|---:|---:|---|---:|---|")
        for policy, ceiling, rows in cases:
            base = [r for r in rows if r["extra_info"].get("baseline")]
            if len(base) != 1:
                raise SystemExit(f"group {rows[0]['group']}: expected one ctxfast baseline row")
            bmed = base[0]["stats"]["median"]
            order = ["ctxfast", "ctxfast.cold", "reference", "reference.batch", "langchain", "langchain.memo", "naive"]
            rows = sorted(rows, key=lambda r: order.index(r["extra_info"]["contender"]))
            pkey = {"warm-10k": f"fit/warm-10k/{policy}/{ceiling // 1000}k",
                    "scratch": f"fit/scratch-t60/{policy}/{ceiling // 1000}k",
                    "langchain": f"fit/langchain-t60/{ceiling // 1000}k"}.get(scenario)
            for i, r in enumerate(rows):
                e = r["extra_info"]
                med = r["stats"]["median"]
                ratio = med / bmed
                inter = ""
                verdict = ""
                if target and e["contender"] == target[0]:
                    ok = ratio >= target[1]
                    verdict = "PASS" if ok else "**MISS**"
                    if pkey in paired:
                        inter = fmt_ratio(paired[pkey]["ratio"])
                    summary.setdefault(scenario, []).append((ratio, ok, f"{policy} {ceiling // 1000}k"))
                    verdicts.append((f"{scenario} {policy} {ceiling // 1000}k", ok))
                first = i == 0
                lines.append(
                    f"| {policy if first else ''} | {f'{ceiling // 1000}k' if first else ''} | {e['contender']} | "
                    f"{outcome(e)} | {fmt_time(med)} | {'—' if e.get('baseline') else fmt_ratio(ratio)} | {inter} | "
                    f"{count_calls(e)} | {load(e)} | {verdict} |")
        lines.append("")
    lines.append("### Targets")
    lines.append("")
    lines.append("| target | met on | worst ratio | best ratio | verdict |")
    lines.append("|---|---:|---:|---:|---|")
    for scenario, (contender, minimum) in TARGETS.items():
        rs = summary.get(scenario, [])
        if not rs:
            lines.append(f"| {scenario} ≥{minimum:g}× | not run | | | |")
            continue
        met = sum(ok for _, ok, _ in rs)
        worst = min(rs)
        best = max(rs)
        lines.append(f"| {scenario}: {contender} ≥ {minimum:g}× ctxfast | {met}/{len(rs)} cases | "
                     f"{fmt_ratio(worst[0])} ({worst[2]}) | {fmt_ratio(best[0])} ({best[2]}) | "
                     f"{'PASS' if met == len(rs) else '**MISS**'} |")
    lines.append("")
    return "\n".join(lines), verdicts


def main() -> None:
    reporting.main(__doc__, BENCH_FILE, "ctxfast-fit-", build_report,
                   pytest_help="extra arguments for pytest (e.g. -k scratch)")


if __name__ == "__main__":
    main()
