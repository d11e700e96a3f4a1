#!/usr/bin/env python
"""Run the ContextWindow session benchmark and print a Markdown report with the targets checked.

    python benches/report_window.py                  # full run (~30 s), table on stdout
    python benches/report_window.py --json out.json  # keep pytest-benchmark's JSON
    python benches/report_window.py --from-json out.json   # re-print a report without re-running
    python benches/report_window.py --strict         # exit 1 when a target is missed

A 60-turn agent session (see ``test_bench_window.py``): each turn admits the user's message, 8
retrieved chunks (half of them already retrieved in an earlier turn), a tool call with its result
and the answer, then fits. Times are per turn (that work only), median over rounds, then the median
over turns 5-14 and 50-59. pytest's own output goes to stderr.
"""

from __future__ import annotations

import os
from pathlib import Path

import reporting
from reporting import fmt_ratio, fmt_time

HERE = Path(__file__).resolve().parent
BENCH_FILE = HERE / "test_bench_window.py"

TARGET_LANGCHAIN = 50.0
TARGET_FLAT = 1.5
ORDER = ["ctxfast", "ctxfast.wm70", "python", "langchain"]
LABELS = {
    "ctxfast": "ctxfast `ContextWindow` (admit_many + fit)",
    "ctxfast.wm70": "ctxfast `ContextWindow`, `low_watermark=0.7`",
    "python": "pure-Python window, same design (tiktoken per segment)",
    "langchain": "LangChain `trim_messages` over the whole history (tiktoken counter)",
}
SHOW_TURNS = [1, 5, 10, 15, 20, 30, 40, 50, 60]


def build_report(data: dict) -> tuple[str, list[tuple[str, bool]]]:
    rows = {b["extra_info"]["contender"]: b["extra_info"] for b in data["benchmarks"]
            if b.get("group") == "window-session"}
    if "ctxfast" not in rows:
        raise SystemExit("no ctxfast row in the benchmark JSON")
    ctx = rows["ctxfast"]
    mi = data.get("machine_info", {})
    lines: list[str] = []
    verdicts: list[tuple[str, bool]] = []
    lines.append("## ctxfast ContextWindow — 60-turn agent session")
    lines.append("")
    lines.append(
        f"Machine: {mi.get('cpu', {}).get('brand_raw', '?')}, {os.cpu_count()} cores visible, Python "
        f"{mi.get('python_version', '?')}; {data.get('datetime', '')}. Window limit {ctx['limit']:,} tokens, "
        "default policy (conversation oldest first, then retrieved lowest score first). Per-turn time = "
        "admitting the turn's 12 segments (counting them) + fitting (Segment / message objects are built "
        "outside the timing for every contender); median over rounds, each round a session with new text.")
    lines.append("")
    lines.append("| contender | turns 5–14 | turns 50–59 | 50–59 ÷ 5–14 | × ctxfast (50–59) | rounds | "
                 "duplicate chunk tokens sent (60 turns) | turns that evicted | CPU self / others |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in ORDER:
        e = rows.get(c)
        if e is None:
            continue
        early, late = e.get("early"), e.get("late")
        growth = f"{late / early:.2f}" if early and late else "—"
        ratio = "—" if c == "ctxfast" or not late else fmt_ratio(late / ctx["late"])
        cpu = ""
        if e.get("cpu_self") is not None:
            others = e.get("cpu_others")
            cpu = f"{e['cpu_self']:.2f} / {'?' if others is None else f'{others:.2f}'}"
        evicting = e.get("evicting_turns") if c != "langchain" else "—"
        lines.append(f"| {LABELS[c]} | {fmt_time(early)} | {fmt_time(late)} | {growth} | {ratio} | {e['rounds']} | "
                     f"{e['dup_tokens_sent']:,} | {evicting} | {cpu} |")
    lines.append("")

    # per-turn profile
    lines.append("Per-turn median at selected turns:")
    lines.append("")
    present = [c for c in ORDER if c in rows]
    lines.append("| turn | " + " | ".join(present) + " |")
    lines.append("|---:|" + "---:|" * len(present))
    for t in SHOW_TURNS:
        cells = []
        for c in present:
            pt = rows[c]["per_turn"]
            cells.append(fmt_time(pt[t - 1]) if t <= len(pt) else "—")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    lines.append("")

    # targets
    lines.append("### Targets")
    lines.append("")
    lines.append("| target | measured | verdict |")
    lines.append("|---|---|---|")
    lc = rows.get("langchain")
    if lc and lc.get("late"):
        r = lc["late"] / ctx["late"]
        ok = r >= TARGET_LANGCHAIN
        verdicts.append(("langchain", ok))
        lines.append(f"| ≥ {TARGET_LANGCHAIN:g}× LangChain at turns 50–59 | {fmt_ratio(r)} "
                     f"({fmt_time(lc['late'])} vs {fmt_time(ctx['late'])}) | {'PASS' if ok else '**MISS**'} |")
    else:
        lines.append(f"| ≥ {TARGET_LANGCHAIN:g}× LangChain at turns 50–59 | not run | |")
    flat = ctx["late"] / ctx["early"]
    ok = flat <= TARGET_FLAT
    verdicts.append(("flat", ok))
    lines.append(f"| ctxfast flat: turns 50–59 within {TARGET_FLAT:g}× of turns 5–14 | {flat:.2f}× "
                 f"({fmt_time(ctx['late'])} vs {fmt_time(ctx['early'])}) | {'PASS' if ok else '**MISS**'} |")
    ok = ctx["dup_tokens_sent"] == 0
    verdicts.append(("duplicates", ok))
    lc_dup = f"; LangChain's requests carried {lc['dup_tokens_sent']:,} duplicate chunk tokens" if lc else ""
    lines.append(f"| zero duplicate tokens for recurring chunks | {ctx['dup_tokens_sent']:,} sent by ctxfast; "
                 f"{ctx['refused']:,} recurring chunks refused at admission = {ctx['resend_avoided']:,} tokens "
                 f"a naive loop would have re-sent{lc_dup} | {'PASS' if ok else '**MISS**'} |")
    lines.append("")

    # cached prefix
    wm = rows.get("ctxfast.wm70")
    lines.append("### Turns that keep their cached prefix (turns 2–60)")
    lines.append("")
    lines.append("A turn keeps its cached prefix when everything held before its admissions is still the "
                 "front of the request after its fit (the cut did not move).")
    lines.append("")
    lines.append("| window | by `stable_prefix_tokens` ≥ tokens held before the turn | by the texts sent (previous request is a prefix) | turns that evicted |")
    lines.append("|---|---:|---:|---:|")
    for name, e in (("`low_watermark=None`", ctx), ("`low_watermark=0.7`", wm)):
        if e is None:
            continue
        n = e["turns"] - 1
        lines.append(f"| {name} | {e['stable_lib']} / {n} | {e['stable_text']} / {n} | {e['evicting_turns']} |")
    lines.append("")
    if ctx["stable_lib"] < ctx["stable_text"] or (wm and wm["stable_lib"] < wm["stable_text"]):
        lines.append("`stable_prefix_tokens` under-reports here: demoting the previous CURRENT_TURN to "
                     "CONVERSATION bumps that entry's version, so the reported prefix stops at the previous "
                     "user message although no text changed (see tests/test_window_watermark.py, xfail).")
        lines.append("")
    py = rows.get("python")
    if py and py.get("late"):
        lines.append(f"For scale: the pure-Python window of the same design takes {fmt_time(py['early'])} / "
                     f"{fmt_time(py['late'])} per turn — {fmt_ratio(py['late'] / ctx['late'])} ctxfast's time at "
                     "turns 50–59. Most of a turn is counting the new text (≈2,300 tokens), which both do "
                     "natively; the window bookkeeping is small either way.")
        lines.append("")
    return "\n".join(lines), verdicts


def main() -> None:
    reporting.main(__doc__, BENCH_FILE, "ctxfast-window-", build_report)


if __name__ == "__main__":
    main()
