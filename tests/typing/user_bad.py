"""Wrong code a user might write: ``tests/test_typing.py`` checks that ``mypy --strict`` reports
exactly the errors marked ``# expect: <error code>`` here, each on its own line, and nothing
else. This file is only type-checked, never run.

The stubs must keep catching these while accepting ``user_good.py``: loosening a parameter to
``Any`` (or ``str``) to make correct code pass would let these through.
"""

from __future__ import annotations

from ctxfast import Budget, ContextWindow, Fit, Policy, PresetName, PromptLayer as L, Segment, Tokenizer, fit
from ctxfast.langchain import trim_messages

bad_keys: dict[int, int] = {3: 100}
Budget(1_000, caps=bad_keys)  # expect: arg-type
Budget(1_000, caps={"retrieved": "14k"})  # expect: dict-item
Budget(1_000, caps={L.RETRIEVED: 1.5})  # expect: dict-item
Budget("1000")  # expect: call-overload
Policy.preset("agnet")  # expect: arg-type
typo: PresetName = "seven-tier"  # expect: assignment
fit([{"text": "a dict is not a Segment"}], Budget(100))  # expect: list-item
fit([Segment("x")], 100)  # expect: arg-type
Segment("x", score="high")  # expect: arg-type
Segment("x", L.HISTORY)  # expect: attr-defined
Segment("x").txt  # expect: attr-defined
ContextWindow(1_000).admit("a str is not a Segment")  # expect: arg-type
total: str = fit([Segment("x")], Budget(100)).total  # expect: assignment
trim_messages([], max_tokens=100).fit_result  # expect: attr-defined
Tokenizer.default().count(b"bytes")  # expect: arg-type


def wrong_return(result: Fit) -> list[str]:
    return result.kept  # expect: return-value
