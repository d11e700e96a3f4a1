"""Issue 10's guarantee as a property: whatever the policy and the budget, what the adapters return
is a request the provider accepts, and ``fit.total`` is what it costs.

Random OpenAI and Anthropic conversations (``agent_payloads.draw``: older exchanges, then an
agent loop of up to 12 tool rounds after the ask; images beside user text and in tool results,
parallel calls, results as strings or blocks) are fitted under the presets and under policies
whose truncate rungs reach conversation and tool results, at budgets from 2 % to 110 % of the
request. Each call returns a request that passes ``agent_payloads.check_openai`` /
``check_anthropic`` (results right after their calls, Anthropic roles alternating from a user
message, no empty content or text block, no lost part or id, units whole or gone, system and
current turn kept, the documented count, at most the ceiling), or raises a clean ``Unfittable``
whose figures say why; the input is never mutated.
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import agent_payloads as ap
from ctxfast import Budget, Policy, Unfittable, anthropic, openai

PRESETS = ("agent", "context_window", "troubleshooting", "seven_tier", "ranked")


def truncating(min_tokens: int, layers: list[str], then: str) -> Policy:
    """A TOML policy: a truncate rung over `layers`, then the history dropped (or digested, then
    dropped). Loaded from a file, as a team's reviewed policy would be."""
    rungs = [
        f'[[rungs]]\nname = "bodies.truncate"\nlayers = {json.dumps(layers)}\norder = "largest"\n'
        f'action = "truncate"\nmin_tokens = {min_tokens}\n'
    ]
    if then == "digest":
        rungs.append('[[rungs]]\nname = "rounds.digest"\nlayers = ["conversation", "tool_result"]\n'
                     'order = "oldest"\naction = "digest"\n')
    rungs.append('[[rungs]]\nname = "history.drop"\nlayers = ["conversation", "tool_result"]\n'
                 'order = "oldest"\naction = "drop"\n')
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.toml"
        path.write_text('name = "truncating"\n' + "\n".join(rungs))
        return Policy.from_toml(str(path))


TRUNCATING = [
    truncating(m, layers, then)
    for m in (1, 16, 128)
    for layers in (["tool_result"], ["conversation"], ["conversation", "tool_result"])
    for then in ("drop", "digest")
]
POLICIES: list[Any] = [*PRESETS, *TRUNCATING]

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def enc(tiktoken_encodings: dict[str, Any]) -> Any:
    return tiktoken_encodings["o200k_base"]


def _unfittable_is_honest(e: Unfittable, ceiling: int) -> None:
    assert e.ceiling == ceiling and e.total > ceiling and e.shortfall == e.total - ceiling


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), fraction=st.floats(0.02, 1.1), policy=st.sampled_from(range(len(POLICIES))),
       pin=st.booleans())
# Message 11 truncated to "Queue", the first word of message 3 too, whose unit was dropped: the
# checker took the copy for message 3's and called that unit split (the fit was right).
@example(seed=948, fraction=0.75, policy=7, pin=False)
def test_openai_outputs_are_valid(seed: int, fraction: float, policy: int, pin: bool, enc: Any) -> None:
    inp = ap.openai(ap.draw(random.Random(seed)))
    snapshot = copy.deepcopy(inp)
    ceiling = max(1, int(ap.openai_total(inp, enc) * fraction))
    try:
        out, fit = openai.fit_messages(inp, Budget(ceiling + 100, 100), policy=POLICIES[policy], pin_first_user=pin)
    except Unfittable as e:
        _unfittable_is_honest(e, ceiling)
    else:
        ap.check_openai(inp, out, fit, ceiling, enc, pin=pin)
    assert inp == snapshot, "the input was mutated"


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), fraction=st.floats(0.02, 1.1), policy=st.sampled_from(range(len(POLICIES))),
       pin=st.booleans())
def test_anthropic_outputs_are_valid(seed: int, fraction: float, policy: int, pin: bool, enc: Any) -> None:
    system, inp = ap.anthropic(ap.draw(random.Random(seed)))
    snapshot = copy.deepcopy(inp)
    ceiling = max(1, int(ap.anthropic_total(system, inp, enc) * fraction))
    try:
        out, fit = anthropic.fit_messages(system, inp, Budget(ceiling + 100, 100), policy=POLICIES[policy],
                                          pin_first_user=pin)
    except Unfittable as e:
        _unfittable_is_honest(e, ceiling)
    else:
        ap.check_anthropic(system, inp, out, fit, ceiling, enc, pin=pin)
    assert inp == snapshot, "the input was mutated"


def test_agent_loops_fit_below_their_full_size(enc: Any) -> None:
    """Report #2, as a property over seeds: an agent loop of many rounds fits under the default
    policy at budgets well below its size, the old rounds digested or dropped."""
    fitted = 0
    for seed in range(40):
        conv = ap.draw(random.Random(seed), max_old=0, max_rounds=12)
        if len(conv.exchanges[-1].rounds) < 6:
            continue
        inp = ap.openai(conv)
        system, amsgs = ap.anthropic(conv)
        ceiling, aceiling = int(ap.openai_total(inp, enc) * 0.6), int(ap.anthropic_total(system, amsgs, enc) * 0.6)
        _, protected = ap.units(inp, lambda m: True, lambda m: bool(m.get("tool_calls")), False)
        if ap.openai_total([inp[i] for i in sorted(protected)], enc) > ceiling:
            continue  # the ask and the newest round alone are over: Unfittable is right
        out, fit = openai.fit_messages(inp, ceiling)
        ap.check_openai(inp, out, fit, ceiling, enc)
        try:
            aout, afit = anthropic.fit_messages(system, amsgs, aceiling)
        except Unfittable as e:
            assert e.total > aceiling
            continue
        ap.check_anthropic(system, amsgs, aout, afit, aceiling, enc)
        assert len(out) < len(inp) and len(aout) < len(amsgs)
        fitted += 1
    assert fitted >= 5
