#!/usr/bin/env python
"""Run the 115-message agent benchmark (``test_bench_agent.py``) and print a Markdown report.

    python benches/report_agent.py                    # full run (~20 s), table on stdout
    python benches/report_agent.py --json out.json    # keep pytest-benchmark's JSON
    python benches/report_agent.py --from-json out.json   # re-print without re-running

"in core" is the median of the one crossing alone (``_fit_chat_fast``) over the median of the
whole ``openai.fit_messages`` call; "vs LangChain" is LangChain's median over the row's.
"""

from __future__ import annotations

import os
from pathlib import Path

import reporting
from reporting import fmt_time

HERE = Path(__file__).resolve().parent
BENCH_FILE = HERE / "test_bench_agent.py"
ORDER = ["ctxfast.openai", "ctxfast.openai.core", "ctxfast.openai.python-reader", "ctxfast.langchain", "langchain"]


def build_report(data: dict) -> str:
    groups: dict[int, dict[str, dict]] = {}
    for b in data["benchmarks"]:
        if (b["group"] or "").startswith("agent115-"):
            groups.setdefault(b["extra_info"]["ceiling"], {})[b["extra_info"]["contender"]] = b
    if not groups:
        raise SystemExit("no agent115-* benchmark groups in the JSON")
    mi = data.get("machine_info", {})
    lines = [
        "## The 115-message agent request — `openai.fit_messages` in one crossing",
        "",
        f"Machine: {mi.get('cpu', {}).get('brand_raw', '?')}, {os.cpu_count()} cores visible, "
        f"Python {mi.get('python_version', '?')}; {data.get('datetime', '')}. Input: `agent_request.py` "
        "(system prompt, 4 tools, an ask, the plan, 56 tool rounds; ~38k tokens), warm count cache. "
        "Medians; one run.",
        "",
        "| ceiling | contender | outcome | kept msgs | median | in core | vs LangChain |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    for ceiling in sorted(groups):
        rows = groups[ceiling]
        med = {c: r["stats"]["median"] for c, r in rows.items()}
        lc = med.get("langchain")
        for i, c in enumerate(c for c in ORDER if c in rows):
            e = rows[c]["extra_info"]
            share = ""
            if c == "ctxfast.openai" and "ctxfast.openai.core" in med:
                share = f"{100 * med['ctxfast.openai.core'] / med[c]:.0f} %"
            ratio = "—" if c == "langchain" or lc is None else reporting.fmt_ratio(lc / med[c], one_decimal_from=10)
            label = "nothing removed" if ceiling >= 1_000_000 else f"{ceiling // 1000}k"
            lines.append(f"| {label if i == 0 else ''} | {c} | {e['outcome']} | {e['kept']} | {fmt_time(med[c])} | "
                         f"{share} | {ratio} |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    reporting.main(__doc__, BENCH_FILE, "ctxfast-agent-", lambda data: (build_report(data), []), strict=False,
                   pytest_help="extra arguments for pytest (e.g. -k 8k)")


if __name__ == "__main__":
    main()
