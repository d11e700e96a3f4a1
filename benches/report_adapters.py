#!/usr/bin/env python
"""Run the adapter benchmarks (``test_bench_adapters.py``) and print a Markdown report.

    python benches/report_adapters.py                    # full run (~15 s), table on stdout
    python benches/report_adapters.py --json out.json    # keep pytest-benchmark's JSON
    python benches/report_adapters.py --from-json out.json   # re-print without re-running

"vs LangChain" is LangChain's median divided by the row's median (3.00 = the row took a third of
LangChain's time). "sent" is the whole request that would go out (messages with OpenAI framing and
the tool schemas), recounted with tiktoken, against the ceiling. pytest's own output goes to
stderr.
"""

from __future__ import annotations

import os
from pathlib import Path

import reporting
from reporting import fmt_time

HERE = Path(__file__).resolve().parent
BENCH_FILE = HERE / "test_bench_adapters.py"
ORDER = ["ctxfast.openai", "ctxfast.openai.warm", "ctxfast.langchain", "ctxfast.langchain+tiktoken", "langchain",
         "langchain.defaults"]


def fmt_ratio(r: float) -> str:
    return reporting.fmt_ratio(r, one_decimal_from=10)


def counting(e: dict) -> str:
    c = e["contender"]
    if c.startswith("langchain"):
        return (f"counter calls {e['counter_calls']}, messages counted {e['messages_counted']:,}, "
                f"texts tokenized {e['texts_tokenized']:,}, reversed lists {e['reversed_calls']}")
    if c == "ctxfast.langchain+tiktoken":
        return (f"counter calls {e['counter_calls']} (1 message each), texts tokenized {e['texts_tokenized']:,}; "
                f"fit.count_calls {e['count_calls']}")
    n = e["texts_tokenized"]
    return f"fit.count_calls {e['count_calls']}; {n:,} text{'' if n == 1 else 's'} tokenized, one batch"


def build_report(data: dict) -> str:
    groups: dict[int, list[dict]] = {}
    for b in data["benchmarks"]:
        if b["group"] and b["group"].startswith("adapters-"):
            groups.setdefault(b["extra_info"]["ceiling"], []).append(b)
    if not groups:
        raise SystemExit("no adapters-* benchmark groups in the JSON")
    mi = data.get("machine_info", {})
    rounds = {b["extra_info"]["contender"]: b["stats"]["rounds"] for rows in groups.values() for b in rows}
    lines = [
        "## Provider adapters vs LangChain `trim_messages` — the turn-60 agent request",
        "",
        f"Machine: {mi.get('cpu', {}).get('brand_raw', '?')}, {os.cpu_count()} cores visible, "
        f"Python {mi.get('python_version', '?')}; {data.get('datetime', '')}. "
        "Input: `session.generate(60)` (system prompt, 12 tool schemas, 59 turns with a tool call each, the "
        "current question; ~215k tokens). Medians over fixed rounds "
        f"({', '.join(f'{c} {rounds.get(c, 0)}' for c in ORDER)}); one run.",
        "",
        "| ceiling | contender | outcome | sent / ceiling | kept msgs | median | vs LangChain | counting |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    speedups: dict[str, list[float]] = {}
    for ceiling in sorted(groups):
        rows = sorted(groups[ceiling], key=lambda r: ORDER.index(r["extra_info"]["contender"]))
        lc = [r for r in rows if r["extra_info"]["contender"] == "langchain"]
        lc_median = lc[0]["stats"]["median"] if lc else None
        for i, r in enumerate(rows):
            e = r["extra_info"]
            med = r["stats"]["median"]
            ratio = "—" if e["contender"] == "langchain" or lc_median is None else fmt_ratio(lc_median / med)
            if lc_median is not None and e["contender"].startswith("ctxfast"):
                speedups.setdefault(e["contender"], []).append(lc_median / med)
            lines.append(
                f"| {f'{ceiling // 1000}k' if i == 0 else ''} | {e['contender']} | {e['outcome']} | "
                f"{e['total']:,} / {ceiling:,} | {e['kept']} | {fmt_time(med)} | {ratio} | {counting(e)} |")
    lines += ["", "| contender | vs LangChain (min … max over ceilings) |", "|---|---|"]
    for c in ORDER:
        if c in speedups:
            lines.append(f"| {c} | {fmt_ratio(min(speedups[c]))} … {fmt_ratio(max(speedups[c]))} |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    # No targets here, hence no --strict and nothing to judge.
    reporting.main(__doc__, BENCH_FILE, "ctxfast-adapters-", lambda data: (build_report(data), []),
                   strict=False, pytest_help="extra arguments for pytest (e.g. -k 8k)")


if __name__ == "__main__":
    main()
