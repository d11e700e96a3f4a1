"""The ``ctxfast`` command line."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ctxfast import CtxfastError, Tokenizer, __version__, build_profile

_DEMO_TEXTS = {
    "system prompt": "You are a careful support engineer. Answer from the evidence given; "
    "say so when the evidence does not cover the question.",
    "tool schema (JSON)": '{"name": "get_cluster_status", "parameters": {"type": "object", '
    '"properties": {"cluster": {"type": "string"}, "region": {"type": "string"}}}}',
    "code": "def evict(units, deficit):\n    freed = 0\n    for u in sorted(units, key=rank):\n"
    "        if freed >= deficit:\n            break\n        freed += u.tokens\n",
    "Japanese prose": "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。",
}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxfast")
def main() -> None:
    """Build LLM requests under a token budget; evict by a written policy."""


def _fail(message: str) -> None:
    click.echo(f"ctxfast: error: {message}", err=True)
    sys.exit(2)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--encoding", default="o200k_base", show_default=True, help="Embedded encoding.")
def count(files: tuple[Path, ...], encoding: str) -> None:
    """Count the tokens of each FILE (UTF-8 text)."""
    try:
        tok = Tokenizer.from_encoding(encoding)
    except CtxfastError as e:
        _fail(str(e))
    texts = []
    for f in files:
        try:
            texts.append(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            _fail(f"{f}: {e}")
    counts = tok.count_many(texts)
    for f, n in zip(files, counts):
        click.echo(f"{int(n):>10,}  {f}")
    if len(files) > 1:
        click.echo(f"{int(counts.sum()):>10,}  total")


@main.command()
def demo() -> None:
    """Count a few kinds of text exactly, on the embedded tokenizer (no network, no files)."""
    tok = Tokenizer.default()
    click.echo(f"ctxfast {__version__} ({build_profile} build), tokenizer {tok.name}\n")
    click.echo(f"{'text':<22}{'chars':>7}{'tokens':>8}{'chars/4':>9}")
    for label, text in _DEMO_TEXTS.items():
        exact = tok.count(text)
        estimate = -(-len(text) // 4)
        click.echo(f"{label:<22}{len(text):>7}{exact:>8}{estimate:>9}")
    click.echo("\nThe chars/4 estimate is what a slice like prompt[:limit*4] assumes; the exact")
    click.echo("count is what the model is billed and limited by.")
    info = tok.cache_info()
    click.echo(f"count cache: {info.entries} entries, {info.misses} misses, capacity {info.capacity:,}")


if __name__ == "__main__":
    main()
