"""The ``ctxfast`` command line (also ``python -m ctxfast``).

Bad input prints ``ctxfast: error: ...`` naming the problem and exits with status 2 without
writing anything: unreadable files, invalid JSON, JSON nested too deeply for the parser,
integers over Python's int-to-str limit, fields of the wrong type, a payload whose format cannot
be told, and every ``CtxfastError`` the adapters raise (they raise nothing else on a malformed
payload). Never a traceback. A message is one line unless it has lines of its own (the TOML
parser's caret diagram); a remedy follows as ``; hint: ...``.

The jobs live in ``_cli_fit`` (the fit command), ``_cli_detect`` (format, encoding and reserve
read from the payload), ``_cli_render`` (the text and JSON traces), ``_cli_count``,
``_cli_policy`` (``--policy`` and ``--encoding``) and ``_cli_io`` (consoles, errors, files).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import click

from ctxfast import Policy, Tokenizer, __version__, build_profile, fit
from ctxfast import _cli_io as io
from ctxfast._cli_detect import FORMAT_HELP
from ctxfast._cli_policy import PRESETS, load_policy, load_tokenizer

_PRESET_LIST = ", ".join(PRESETS)

_MAIN_EPILOG = """\b
Examples:
  ctxfast demo
  ctxfast fit payload.json --window 128000 -o fitted.json
  cat payload.json | ctxfast fit - --window 32000 -o - > fitted.json
  ctxfast count docs
  ctxfast policy show agent
"""

_FIT_EPILOG = f"""\b
Examples:
  ctxfast fit payload.json --window 128000 -o fitted.json
  ctxfast fit payload.json --window 32000 --policy team.toml --json
  cat payload.json | ctxfast fit - --window 16000 -o - --quiet

Presets for --policy: {_PRESET_LIST}.
"""

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 80}


@click.group(context_settings=_CONTEXT, epilog=_MAIN_EPILOG)
@click.version_option(__version__, prog_name="ctxfast")
def cli() -> None:
    """Build LLM requests under a token budget; evict by a written policy."""


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point: help asked for by a bare command is printed (status 0); click's usage
    errors become the same ``ctxfast: error:`` line as every other error (status 2)."""
    no_args = getattr(click.exceptions, "NoArgsIsHelpError", None)
    try:
        code = cli.main(args=list(argv) if argv is not None else None, prog_name="ctxfast", standalone_mode=False)
    except click.UsageError as e:
        if no_args is not None and isinstance(e, no_args) and e.ctx is not None:
            click.echo(e.ctx.get_help())
            raise SystemExit(0) from None
        io.fail(" ".join(e.format_message().split()))
    except click.ClickException as e:
        io.fail(" ".join(e.format_message().split()))
    except click.Abort:
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)


@cli.command("fit", no_args_is_help=True, epilog=_FIT_EPILOG)
@click.argument("payload", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--window", type=click.IntRange(min=1), required=True, metavar="TOKENS",
              help="The model's context window, in tokens.")
@click.option("--reserve", type=click.IntRange(min=0), default=None, metavar="TOKENS",
              help="Tokens kept for the reply. Default: the payload's max_completion_tokens or "
                   "max_tokens (Responses: max_output_tokens; Gemini: generationConfig.maxOutputTokens; "
                   "0 when it sets none); the trace's ceiling line says which.")
@click.option("--policy", "policy_spec", default="agent", show_default=True, metavar="PRESET|FILE",
              help=f"A preset ({_PRESET_LIST}) or a policy TOML file.")
@click.option("--format", "fmt", type=click.Choice(["openai", "anthropic", "responses", "gemini", "chat"]), default=None, help=FORMAT_HELP)
@click.option("--template", default=None, metavar="PATH",
              help="--format chat: the model's chat_template.jinja, tokenizer_config.json or model folder.")
@click.option("--tokenizer", default=None, metavar="PATH",
              help="--format chat: the model's tokenizer.json; the rendered prompt is counted with it, exactly.")
@click.option("--encoding", default=None, metavar="NAME",
              help="Embedded encoding to count with (o200k_base, cl100k_base). Default: the "
                   "OpenAI model's own (cl100k_base for gpt-4 and gpt-3.5, o200k_base for "
                   "gpt-4o, 4.1, 5 and the o-series), else o200k_base, stated in the output.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default=None, metavar="FILE",
              help="Write the fitted payload here, atomically, in the input's shape; - is stdout "
                   "(the trace then goes to stderr). A new file gets the input's permissions.")
@click.option("--json", "as_json", is_flag=True, help="Print the trace as one JSON object (schema ctxfast.fit/1).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def fit_command(payload: str, window: int, reserve: int | None, policy_spec: str, fmt: str | None,
                template: str | None, tokenizer: str | None, encoding: str | None, output: str | None,
                as_json: bool, quiet: bool) -> None:
    """Fit PAYLOAD (a chat request as JSON; - reads stdin) under --window minus --reserve.

    PAYLOAD is an OpenAI Chat Completions, OpenAI Responses, Anthropic Messages or Gemini
    generateContent body, or a bare list of messages (items, contents). With --format chat
    (--template, --tokenizer) it is an open model's chat request, counted as its rendered
    chat template. The trace says what was removed, by which rung, and why.
    """
    from ctxfast._cli_fit import Options, run

    run(Options(payload, window, reserve, policy_spec, fmt, encoding, output, as_json, quiet, template, tokenizer))


@cli.command(no_args_is_help=True)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--encoding", default="o200k_base", show_default=True, metavar="NAME",
              help="Embedded encoding (o200k_base, cl100k_base).")
def count(paths: Sequence[str], encoding: str) -> None:
    """Count the tokens of each PATH: a UTF-8 text file, a folder (recursively) or - (stdin).

    Folders skip hidden names (.git...). Binary and non-UTF-8 files are listed as skipped.
    Many files show a progress bar with the rate and the time left.
    """
    from ctxfast._cli_count import count as run_count

    run_count(paths, load_tokenizer(encoding))


@cli.group(context_settings=_CONTEXT, invoke_without_command=False, no_args_is_help=True)
def policy() -> None:
    """Inspect policies."""


@policy.command("show", no_args_is_help=True, epilog=f"Presets: {_PRESET_LIST}.")
@click.argument("spec", metavar="PRESET|FILE")
def policy_show(spec: str) -> None:
    """Print the documented order of a policy, first to go … never.

    PRESET is one of the presets below; FILE a policy TOML file.
    """
    io.show(io.out, load_policy(spec).describe().rstrip("\n"))



@cli.command()
def demo() -> None:
    """A worked eviction example on the embedded tokenizer (no network, no files)."""
    from ctxfast._demo import seed000_request

    tok = Tokenizer.default()
    segments, budget = seed000_request(tok)
    policy_ = Policy.troubleshooting()
    io.say(io.out, f"ctxfast {__version__} ({build_profile} build), tokenizer {tok.name}")
    io.say(io.out, "A troubleshooting request: system prompt, tool schemas, 8 retrieved chunks")
    io.say(io.out, "and 10 exchanges, counted exactly, on a 32,000-token window with 4,000")
    io.say(io.out, "reserved for the answer.")
    io.say(io.out, "")
    result = fit(segments, budget, policy_, tok)
    from ctxfast._cli_render import print_text

    print_text(io.out, result, policy_, [], budget.reserve, None)
    io.say(io.out, "")
    counts = f"{result.count_calls} authoritative count{'s' if result.count_calls != 1 else ''}"
    io.say(io.out, f"{len(result.evicted)} segments left, by rung {', '.join(result.rungs_fired) or '-'}; {counts}.")
    io.say(io.out, "The order is data; print it with: ctxfast policy show troubleshooting")


if __name__ == "__main__":
    main()
