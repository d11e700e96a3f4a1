"""The ``ctxfast`` command line (also ``python -m ctxfast``).

Bad input prints one line naming the problem and exits with status 2 without writing
anything: unreadable files, invalid JSON, JSON nested too deeply for the parser, integers over
Python's int-to-str limit, fields of the wrong type, and every ``CtxfastError`` the adapters
raise (they raise nothing else on a malformed payload). Never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.bar import Bar
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ctxfast import (
    Budget,
    CtxfastError,
    Fit,
    Policy,
    PromptLayer,
    Tokenizer,
    Unfittable,
    __version__,
    build_profile,
    fit,
)

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False)

#: Files counted per native call: large enough to use both cores, small enough to show progress.
_COUNT_BATCH = 64


def _fail(message: str) -> NoReturn:
    # One line, whatever the message held.
    _err.print(f"ctxfast: error: {' '.join(message.split())}", markup=False, soft_wrap=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxfast")
def cli() -> None:
    """Build LLM requests under a token budget; evict by a written policy."""


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: click's usage errors become the same one line as every other error."""
    try:
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="ctxfast", standalone_mode=False)
    except click.UsageError as e:
        _fail(e.format_message())
    except click.ClickException as e:
        _fail(e.format_message())
    except click.Abort:
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def _load_policy(spec: str) -> Policy:
    """A preset name, or a TOML file."""
    path = Path(spec)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long for a path, or a NUL: not a file
        is_file = False
    if spec.endswith(".toml") or is_file:
        return Policy.from_toml(path)
    return Policy.preset(spec)  # type: ignore[arg-type]  # a user's string: the core checks it


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        _fail(f"{path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        _fail(f"{path}: cannot read: {e}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        _fail(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}")
    except RecursionError:
        _fail(f"{path}: JSON nested too deeply to parse")
    except ValueError as e:  # e.g. an integer over Python's int-to-str limit (4,300 digits)
        _fail(f"{path}: invalid JSON: {e}")


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, then rename: never a half-written file."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _occupancy(before: list[tuple[str, int]], after: dict[str, int], ceiling: int) -> Table:
    """Per-layer size before and after, each as a bar against the ceiling."""
    table = Table(title=f"occupancy (ceiling {ceiling:,})", title_justify="left", box=None, pad_edge=False)
    table.add_column("layer")
    table.add_column("before", justify="right")
    table.add_column("", width=24)
    table.add_column("after", justify="right")
    table.add_column("", width=24)
    for label, size in before:
        kept = after.get(label, 0)
        table.add_row(
            label,
            f"{size:,}",
            Bar(size=max(ceiling, 1), begin=0, end=min(size, ceiling), color="yellow"),
            f"{kept:,}",
            Bar(size=max(ceiling, 1), begin=0, end=min(kept, ceiling), color="green"),
        )
    return table


def _kept_by_layer(result: Fit, labels: dict[PromptLayer, str]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for seg in result.kept:
        label = labels.get(seg.layer, seg.layer.label)
        sizes[label] = sizes.get(label, 0) + seg.count()
    return sizes


def _labels(policy: Policy) -> dict[PromptLayer, str]:
    named = policy.to_dict().get("labels", {})
    return {layer: named.get(layer.label, layer.label) for layer in _ALL_LAYERS}


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


def _show(result: Fit, policy: Policy) -> None:
    _out.print(result.explain(), markup=False, soft_wrap=True)
    _out.print(_occupancy(result.trace.start, _kept_by_layer(result, _labels(policy)), result.ceiling))


@cli.command("fit")
@click.argument("payload", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--window", type=click.IntRange(min=1), required=True, help="Context window, tokens.")
@click.option("--reserve", type=click.IntRange(min=0), default=0, show_default=True, help="Tokens kept for the reply.")
@click.option("--policy", "policy_spec", default="agent", show_default=True, help="A preset name or a policy TOML file.")
@click.option("--format", "fmt", type=click.Choice(["openai", "anthropic"]), default=None, help="Payload format (default: anthropic when the payload has a top-level 'system', else openai).")
@click.option("--encoding", default="o200k_base", show_default=True, help="Embedded encoding to count with.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Write the fitted payload here (atomically).")
def fit_command(payload: Path, window: int, reserve: int, policy_spec: str, fmt: str | None, encoding: str, output: Path | None) -> None:
    """Fit PAYLOAD.json (a chat request) under --window minus --reserve."""
    from ctxfast import anthropic as anthropic_adapter
    from ctxfast import openai as openai_adapter

    data = _read_json(payload)
    try:
        policy = _load_policy(policy_spec)
    except CtxfastError as e:
        _fail(f"--policy {policy_spec}: {e}")
    try:
        tok = Tokenizer.from_encoding(encoding)
        budget = Budget(window, reserve)
        if isinstance(data, list):
            data = {"messages": data}
        if not isinstance(data, dict) or "messages" not in data:
            _fail(f"{payload}: expected a JSON object with a 'messages' list (or a bare list of messages)")
        fmt = fmt or ("anthropic" if "system" in data else "openai")
        if fmt == "anthropic":
            messages, result = anthropic_adapter.fit_messages(
                data.get("system"),
                data["messages"],
                budget,
                tools=data.get("tools"),
                policy=policy,
                tokenizer=tok,
                model=data.get("model"),
                tool_choice=data.get("tool_choice") or "auto",
            )
        else:
            messages, result = openai_adapter.fit_messages(
                data["messages"], budget, tools=data.get("tools"), policy=policy, tokenizer=tok
            )
    except Unfittable as e:
        _fail(f"{payload}: does not fit: {e}")
    except CtxfastError as e:
        _fail(f"{payload}: {e}")
    if output is not None:
        # Serialised before any file exists, so a failure here leaves nothing behind.
        fitted = {**data, "messages": messages}
        try:
            text = json.dumps(fitted, ensure_ascii=False, indent=2) + "\n"
            try:
                encoded = text.encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (from a "\ud800" escape in an uncounted field) has no UTF-8
                # form; escaped JSON holds the same data.
                encoded = (json.dumps(fitted, ensure_ascii=True, indent=2) + "\n").encode("ascii")
        except (RecursionError, ValueError, TypeError) as e:
            _fail(f"{payload}: cannot write the fitted payload as JSON: {type(e).__name__}")
    _show(result, policy)
    if output is not None:
        try:
            _write_atomically(output, encoded)
        except OSError as e:
            _fail(f"{output}: cannot write: {e}")
        _out.print(f"wrote {output} ({len(messages)} messages, {result.total:,} tokens)", markup=False)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--encoding", default="o200k_base", show_default=True, help="Embedded encoding.")
def count(files: Sequence[Path], encoding: str) -> None:
    """Count the tokens of each FILE (UTF-8 text), with a progress bar for many files."""
    try:
        tok = Tokenizer.from_encoding(encoding)
    except CtxfastError as e:
        _fail(str(e))
    results: list[tuple[Path, int]] = []
    columns = (TextColumn("counting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # Only on a terminal: a redirected stderr keeps exactly one line per error.
    quiet = len(files) < 2 * _COUNT_BATCH or not _err.is_terminal
    with Progress(*columns, console=_err, transient=True, disable=quiet) as progress:
        task = progress.add_task("count", total=len(files))
        for start in range(0, len(files), _COUNT_BATCH):
            batch = files[start : start + _COUNT_BATCH]
            texts = []
            for f in batch:
                try:
                    texts.append(f.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    _fail(f"{f}: no such file")
                except (OSError, UnicodeDecodeError) as e:
                    _fail(f"{f}: cannot read as UTF-8 text: {e}")
            try:
                counts = tok.count_many(texts)
            except CtxfastError as e:
                _fail(str(e))
            results += [(f, int(n)) for f, n in zip(batch, counts)]
            progress.advance(task, len(batch))
    for f, n in results:
        _out.print(f"{n:>12,}  {f}", markup=False)
    if len(results) > 1:
        _out.print(f"{sum(n for _, n in results):>12,}  total ({len(results)} files, {tok.name})", markup=False)


@cli.group()
def policy() -> None:
    """Inspect policies."""


@policy.command("show")
@click.argument("spec")
def policy_show(spec: str) -> None:
    """Print the documented order of a policy (a preset name or a TOML file), first to go … never."""
    try:
        _out.print(_load_policy(spec).describe(), markup=False)
    except CtxfastError as e:
        _fail(str(e))


@cli.command()
def demo() -> None:
    """A worked eviction example on the embedded tokenizer (no network, no files)."""
    from ctxfast._demo import seed000_request

    tok = Tokenizer.default()
    segments, budget = seed000_request(tok)
    policy_ = Policy.troubleshooting()
    _out.print(f"ctxfast {__version__} ({build_profile} build), tokenizer {tok.name}", markup=False)
    _out.print(
        "A troubleshooting request: system prompt, tool schemas, 8 retrieved chunks and 10 exchanges,\n"
        "counted exactly, on a 32,000-token window with 4,000 reserved for the answer.\n",
        markup=False,
        soft_wrap=True,
    )
    result = fit(segments, budget, policy_, tok)
    _show(result, policy_)
    _out.print(
        f"\n{len(result.evicted)} segments left by rung "
        f"{', '.join(result.rungs_fired) or '-'}; authoritative counts made: {result.count_calls}.",
        markup=False,
        soft_wrap=True,
    )
    _out.print("The order is data; print it with: ctxfast policy show troubleshooting", markup=False)


if __name__ == "__main__":
    main()

