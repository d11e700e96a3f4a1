"""Framing constants, read from the core's one table (``rust/payload/framing.rs``), which the
adapters' fast path uses too: the Python readers and the Rust one cannot disagree on them."""

from __future__ import annotations

from ctxfast._core import _framing

#: OpenAI Chat Completions: per message, per ``name``, per tool call, and the reply priming.
OPENAI_CHAT: dict[str, int] = dict(_framing("openai-chat"))
