#!/usr/bin/env python
"""Run the tokenizer benchmarks and print a Markdown report with the targets checked.

    python benches/report.py                  # full run, table on stdout, pytest's output on stderr
    python benches/report.py --json out.json  # keep pytest-benchmark's JSON
    python benches/report.py --from-json out.json   # re-print from a JSON (start-up is re-measured)
    python benches/report.py --strict         # exit 1 when a target is missed
    python benches/report.py -- -k count_many # extra pytest arguments after "--" (a subset)

Ratios are "× ctxfast's time": the contender's median divided by the median of the ctxfast row
its group is compared against (so 2.00 means ctxfast took half the time). Start-up is measured in
fresh interpreters (median of 5), separately from pytest. "CPU self / others" columns: cores'
worth of CPU this process and all other processes used during each row (benches/cpuload.py) —
on a shared 2-core machine that tells a noisy row from a slow library.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import reporting

HERE = Path(__file__).resolve().parent
BENCH_FILE = HERE / "test_bench_tokenizer.py"

TIKTOKEN_MIN_RATIO = 1.5  # tiktoken's time / ctxfast's, on every corpus
PATHOLOGICAL_BUDGET_S = 0.1
LINEAR_FACTOR = 6.0
CACHE_MIN_RATIO = 20.0
COUNT_MANY_MIN_RATIO = 1.6
STARTUP_BUDGET_S = 0.150
STARTUP_RUNS = 5

CORPORA = ["prose", "code", "json", "cjk"]


# ---- formatting ------------------------------------------------------------------------------


def fmt_cores(info: dict) -> str:
    """'self / others' cores' worth of CPU during a row (see cpuload.py)."""
    own, others = info.get("cpu_self"), info.get("cpu_others")
    if own is None:
        return ""
    return f"{own:.2f} / {'?' if others is None else f'{others:.2f}'}"


def fmt_time(s: float) -> str:
    # Warm-cache counts and cache hits take ~100-200 ns: the coarser units of the other reports
    # would print them as 0 µs.
    return reporting.fmt_time(s, fine=True)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "**MISS**"


class Report:
    def __init__(self, paired: dict[str, dict] | None = None) -> None:
        self.lines: list[str] = []
        # (name, measured, ok, interleaved cross-check or "", that cross-check's verdict or None)
        self.targets: list[tuple[str, str, bool, str, bool | None]] = []
        self.paired = paired or {}

    def add(self, line: str = "") -> None:
        self.lines.append(line)

    def target(self, name: str, measured: str, ok: bool, cross: tuple[str, bool] | None = None) -> str:
        """Record a target judged on medians, with its interleaved cross-check if there is one."""
        shown, cross_ok = cross if cross else ("", None)
        self.targets.append((name, measured, ok, shown, cross_ok))
        return verdict(ok)

    def ratio_at_least(self, key: str, minimum: float) -> tuple[str, bool] | None:
        res = self.paired.get(key)
        return (f"{res['ratio']:.2f}x", res["ratio"] >= minimum) if res else None

    def text(self) -> str:
        return "\n".join(self.lines)


# ---- benchmark JSON --------------------------------------------------------------------------


def load_groups(path: Path) -> tuple[dict, dict[str, list[dict]]]:
    data = json.loads(path.read_text())
    groups: dict[str, list[dict]] = {}
    for b in data["benchmarks"]:
        groups.setdefault(b["group"], []).append(b)
    return data, groups


def median(b: dict) -> float:
    return b["stats"]["median"]


def by_contender(rows: list[dict]) -> dict[str, dict]:
    return {r["extra_info"]["contender"]: r for r in rows}


def baseline_of(rows: list[dict]) -> dict:
    base = [r for r in rows if r["extra_info"].get("baseline")]
    if len(base) != 1:
        raise SystemExit(f"expected one baseline row in group {rows[0]['group']}, got {len(base)}")
    return base[0]


def throughput_section(rep: Report, groups: dict[str, list[dict]]) -> None:
    rep.add("### Throughput: one ~1 MB text, o200k_base, `cache=False`")
    rep.add()
    rep.add("| corpus | contender | median | MB/s | M tokens/s | × ctxfast time | target | CPU self / others |")
    rep.add("|---|---|---:|---:|---:|---:|---|---:|")
    for corpus in CORPORA:
        rows = groups.get(f"throughput-{corpus}")
        if not rows:
            rep.add(f"| {corpus} | (not run) | | | | | | |")
            continue
        base = median(baseline_of(rows))
        info = rows[0]["extra_info"]
        label = f"{corpus} ({info['bytes'] / 1e6:.2f} MB, {info['tokens']:,} tok)"
        for i, r in enumerate(sorted(rows, key=median)):
            c = r["extra_info"]["contender"]
            m = median(r)
            ratio = m / base
            tgt = ""
            if c == "tiktoken":
                tgt = f"≥ {TIKTOKEN_MIN_RATIO}x: " + rep.target(
                    f"throughput {corpus}: tiktoken time / ctxfast time ≥ {TIKTOKEN_MIN_RATIO}",
                    f"{ratio:.2f}x",
                    ratio >= TIKTOKEN_MIN_RATIO,
                    cross=rep.ratio_at_least(f"throughput-{corpus}:tiktoken", TIKTOKEN_MIN_RATIO),
                )
            rep.add(
                f"| {label if i == 0 else ''} | {c} | {fmt_time(m)} | {info['bytes'] / m / 1e6:.1f} "
                f"| {info['tokens'] / m / 1e6:.2f} | {ratio:.2f} | {tgt} | {fmt_cores(r['extra_info'])} |"
            )
    rep.add()
    rep.add(
        "`tokenizers` = the Python HF package on o200k_base converted from tiktoken's rank file "
        "(byte-level BPE, merges derived from the ranks, o200k split regex); `ctxfast.from_hf` = "
        "ctxfast's HF backend on that same tokenizer.json. Every row's count equals tiktoken's."
    )
    rep.add()


def simple_section(
    rep: Report, title: str, rows: list[dict] | None, per_item: bool = False, note: str = ""
) -> dict[str, float]:
    """A group's rows sorted by median; returns contender -> median (per item if asked)."""
    rep.add(title)
    rep.add()
    if note:
        rep.add(note)
        rep.add()
    if not rows:
        rep.add("(not run)")
        rep.add()
        return {}
    base_row = baseline_of(rows)
    n_items = rows[0]["extra_info"].get("items_per_call", 1) if per_item else 1
    base = median(base_row) / n_items
    unit = "median per unit" if per_item else "median"
    rep.add(f"| contender | {unit} | × {base_row['extra_info']['contender']} time | CPU self / others |")
    rep.add("|---|---:|---:|---:|")
    out = {}
    for r in sorted(rows, key=median):
        m = median(r) / n_items
        out[r["extra_info"]["contender"]] = m
        rep.add(f"| {r['extra_info']['contender']} | {fmt_time(m)} | {m / base:.2f} | {fmt_cores(r['extra_info'])} |")
    rep.add()
    return out


def pathological_section(rep: Report, groups: dict[str, list[dict]]) -> None:
    rep.add("### Pathological inputs (ctxfast `count(text, cache=False)`)")
    rep.add()
    big = by_contender(groups.get("pathological-1MiB", []))
    small = by_contender(groups.get("pathological-256KiB", []))
    if not big:
        rep.add("(not run)")
        rep.add()
        return
    rep.add(f"| input | 1 MiB median | 256 KiB median | 1 MiB / 256 KiB | ≤ {PATHOLOGICAL_BUDGET_S} s | linear (< {LINEAR_FACTOR:g}x) | CPU others (1 MiB) |")
    rep.add("|---|---:|---:|---:|---|---|---:|")
    for case, b in big.items():
        tb = median(b)
        s = small.get(case)
        ts = median(s) if s else float("nan")
        ratio = tb / ts
        res = rep.paired.get(f"pathological:{case}")
        c1 = (fmt_time(res["peer_median"]), res["peer_median"] <= PATHOLOGICAL_BUDGET_S) if res else None
        c2 = (f"{res['ratio']:.2f}x", res["ratio"] < LINEAR_FACTOR) if res else None
        v1 = rep.target(f"pathological {case}: 1 MiB ≤ {PATHOLOGICAL_BUDGET_S} s", fmt_time(tb), tb <= PATHOLOGICAL_BUDGET_S, c1)
        v2 = rep.target(f"pathological {case}: linear (< {LINEAR_FACTOR:g}x for 4x input)", f"{ratio:.2f}x", ratio < LINEAR_FACTOR, c2)
        others = b["extra_info"].get("cpu_others")
        rep.add(f"| `{case}` | {fmt_time(tb)} | {fmt_time(ts)} | {ratio:.2f} | {v1} | {v2} | {'' if others is None else f'{others:.2f}'} |")
    rep.add()


# ---- start-up and size -----------------------------------------------------------------------

_STARTUP_CHILD = r"""
import json, time
t0 = time.perf_counter()
import ctxfast
t1 = time.perf_counter()
tok = ctxfast.Tokenizer.default()
t2 = time.perf_counter()
n = tok.count("Hello, world! How many tokens is this?", cache=False)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "default": t2 - t1, "first_count": t3 - t2, "n": n,
                  "so": ctxfast._core.__file__, "profile": ctxfast.build_profile,
                  "version": ctxfast.__version__}))
"""


def startup(runs: int = STARTUP_RUNS) -> list[dict]:
    out = []
    for _ in range(runs):
        res = subprocess.run(
            [sys.executable, "-c", _STARTUP_CHILD], capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()
        )
        out.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return out


def startup_section(rep: Report, samples: list[dict]) -> None:
    med = {k: statistics.median(s[k] for s in samples) for k in ("import", "default", "first_count")}
    total = statistics.median(s["import"] + s["default"] + s["first_count"] for s in samples)
    so = Path(samples[0]["so"])
    size = so.stat().st_size
    rep.add(f"### Start-up in a new process (median of {len(samples)} fresh interpreters) and size")
    rep.add()
    rep.add("| step | median |")
    rep.add("|---|---:|")
    rep.add(f"| `import ctxfast` | {fmt_time(med['import'])} |")
    rep.add(f"| first `Tokenizer.default()` | {fmt_time(med['default'])} |")
    rep.add(f"| first `count()` on it (loads the embedded o200k tables) | {fmt_time(med['first_count'])} |")
    v = rep.target(
        f"first Tokenizer.default() ready to count in a new process ≤ {STARTUP_BUDGET_S * 1e3:.0f} ms "
        "(import + default() + first count)",
        fmt_time(total),
        total <= STARTUP_BUDGET_S,
    )
    rep.add(f"| **import + default() + first count** (budget {STARTUP_BUDGET_S * 1e3:.0f} ms) | {fmt_time(total)} {v} |")
    rep.add()
    rep.add(f"Installed extension: `{so.name}`, {size:,} bytes ({size / 2**20:.1f} MiB).")
    rep.add()


# ---- main ------------------------------------------------------------------------------------


def run_pytest(json_path: Path, extra: list[str]) -> int:
    # Unlike the other reports, a failing check does not end the run: the report still prints and
    # says pytest failed.
    options = ["--benchmark-group-by=group", "--benchmark-columns=median,min,max,rounds,iterations"]
    cmd = reporting.pytest_command(BENCH_FILE, json_path, options, extra)
    LOADAVG.append(os.getloadavg()[0])
    rc = reporting.run_pytest(cmd, reporting.full_run_env())
    LOADAVG.append(os.getloadavg()[0])
    return rc


#: 1-minute load average before and after the pytest run (2 cores: above ~1 someone else is busy).
LOADAVG: list[float] = []


def build_report(data: dict, groups: dict[str, list[dict]], samples: list[dict], pytest_rc: int | None) -> Report:
    rep = Report(data.get("ctxfast_paired"))
    mi = data.get("machine_info", {})
    cpu = mi.get("cpu", {})
    s0 = samples[0] if samples else {}
    rep.add("## ctxfast token counting: benchmark report")
    rep.add()
    rep.add(
        f"ctxfast {s0.get('version', '?')} ({s0.get('profile', '?')} build), Python {mi.get('python_version', '?')}, "
        f"{cpu.get('brand_raw', mi.get('processor', '?'))}, {os.cpu_count()} cores, {data.get('datetime', '')[:19]}Z. "
        "Medians; ratios are the contender's median over the named ctxfast row's. "
        "Reproduce: `python benches/report.py` (release build installed)."
    )
    if LOADAVG:
        rep.add()
        rep.add(
            f"1-minute load average before / after the run: {LOADAVG[0]:.2f} / {LOADAVG[-1]:.2f} "
            f"(this process alone adds ~1; more means a neighbour shares the {os.cpu_count()} cores)."
        )
    rep.add()
    throughput_section(rep, groups)

    short = simple_section(rep, "### One short count (19-token sentence), per call", groups.get("short-count"))
    if short:
        tk = short["tiktoken"]
        for row in ("ctxfast (cache=False)", "ctxfast (warm cache)"):
            m = short[row]
            rep.target(
                f"short count: {row} ≤ tiktoken",
                f"{fmt_time(m)} vs {fmt_time(tk)} ({tk / m:.2f}x)",
                m <= tk,
                cross=rep.ratio_at_least("short-count:tiktoken", 1.0) if row == "ctxfast (cache=False)" else None,
            )

    cache = simple_section(rep, "### Per-unit cache: 64 distinct 4 KB units, per unit", groups.get("cache-4KB"), per_item=True)
    if cache:
        r = cache["ctxfast (cache=False)"] / cache["ctxfast (cache hit)"]
        rep.target(f"cache hit ≥ {CACHE_MIN_RATIO:g}x faster than a cold count (4 KB)", f"{r:.0f}x", r >= CACHE_MIN_RATIO)

    rows = groups.get("count_many")
    note = ""
    if rows:
        info = rows[0]["extra_info"]
        note = (
            f"{info['texts']:,} texts, {info['bytes'] / 1e6:.2f} MB, {info['tokens']:,} tokens; "
            f"count_many on both cores: {info['bytes'] / median(baseline_of(rows)) / 1e6:.1f} MB/s. "
            "CPU self / others = cores' worth of CPU this process / other processes used meanwhile "
            "(count_many should show ~2 / ~0)."
        )
    many = simple_section(rep, "### count_many: 2,000 texts of 1-8 KB, `cache=False`", rows, note=note)
    if many:
        r = many["ctxfast count loop, 1 thread (cache=False)"] / many["ctxfast count_many (cache=False)"]
        rep.target(
            f"count_many on 2 cores ≥ {COUNT_MANY_MIN_RATIO}x a 1-thread loop",
            f"{r:.2f}x",
            r >= COUNT_MANY_MIN_RATIO,
            cross=rep.ratio_at_least("count_many:ctxfast count loop, 1 thread (cache=False)", COUNT_MANY_MIN_RATIO),
        )

    pathological_section(rep, groups)
    if samples:
        startup_section(rep, samples)

    rep.add("### Targets")
    rep.add()
    rep.add(
        "Judged on the medians above. Where a ratio is targeted it is also measured interleaved "
        "(the two calls alternated round by round, median of the per-round ratios), which a drift "
        "of the machine between two benchmark rows cannot move; when the two disagree the result "
        "is marked borderline."
    )
    rep.add()
    rep.add("| target | measured (medians) | interleaved A/B | result |")
    rep.add("|---|---|---:|---|")
    for name, measured, ok, pair, pair_ok in rep.targets:
        note = " (borderline)" if pair_ok is not None and pair_ok != ok else ""
        rep.add(f"| {name} | {measured} | {pair or '—'} | {verdict(ok)}{note} |")
    missed = sum(not t[2] for t in rep.targets)
    rep.add()
    rep.add(f"{len(rep.targets) - missed} of {len(rep.targets)} targets met.")
    busy = [
        (r["extra_info"]["contender"], r["extra_info"]["cpu_others"])
        for rows in groups.values()
        for r in rows
        if (r["extra_info"].get("cpu_others") or 0) >= 0.3
    ]
    busy += [(k, v["cpu_others"]) for k, v in rep.paired.items() if (v.get("cpu_others") or 0) >= 0.3]
    if busy:
        rep.add()
        rep.add(
            f"Other processes used ≥ 0.3 of a core during {len(busy)} measurement(s) "
            f"(worst {max(b[1] for b in busy):.2f} cores): those rows are noisier, and count_many "
            "cannot reach 2x while a core is taken."
        )
    if pytest_rc not in (None, 0):
        rep.add()
        rep.add(f"**pytest exited with {pytest_rc}**: some checks failed (see its output on stderr).")
    return rep


def main(argv: list[str] | None = None) -> int:
    args = reporting.parse_args(
        __doc__,
        argv,
        json_help="where to keep pytest-benchmark's JSON (default: a temp file)",
        from_json_help="report on an existing JSON instead of running pytest",
        pytest_help="extra arguments for pytest (after --)",
    )

    rc = None
    if args.from_json:
        json_path = args.from_json
    else:
        json_path = reporting.json_path_for_run(args, "ctxfast-bench-")
        rc = run_pytest(json_path, args.pytest_args)
        if not json_path.exists():
            print(f"pytest exited with {rc} and wrote no benchmark JSON", file=sys.stderr)
            return rc or 1
        print(f"benchmark JSON: {json_path}", file=sys.stderr)
    data, groups = load_groups(json_path)
    samples = startup()
    rep = build_report(data, groups, samples, rc)
    print(rep.text())
    if args.strict and (any(not t[2] for t in rep.targets) or rc):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
