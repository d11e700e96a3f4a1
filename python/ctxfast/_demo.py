"""The demo's request: seed 000's troubleshooting session, rebuilt from real text whose exact
token counts are the seed's figures, so the trace printed by ``ctxfast demo`` is the seed's own.
"""

from __future__ import annotations

from ctxfast._core import Budget, PromptLayer, Segment, Tokenizer

_SYSTEM = (
    "You are the on-call assistant for the platform team. Answer from the runbooks and the "
    "evidence in this request; when the evidence does not cover the question, say so and name "
    "the command that would settle it. Never suggest deleting a namespace or draining a node "
    "pool without the owner's confirmation. Quote error messages exactly. "
)
_TOOLS = (
    '{"name": "get_cluster_status", "description": "Health of a cluster: nodes, pods, recent '
    'events.", "parameters": {"type": "object", "properties": {"cluster": {"type": "string"}, '
    '"region": {"type": "string", "enum": ["eu-west-1", "us-east-1", "ap-south-1"]}}}} '
)
_CHUNK = (
    "Runbook: when the ingress controller returns 502 after a deploy, check that the new pods "
    "pass readiness, that the service selector matches their labels, and that the upstream "
    "keepalive timeout is shorter than the load balancer's idle timeout. "
)
_ASK = "We still see 502s on the checkout service in eu-west-1 after the 14:10 deploy; what next? "
_ANSWER = (
    "The pods are ready but the service selector still points at version 41, so traffic goes "
    "to terminating pods. Update the selector, then watch the error rate for five minutes. "
)

#: (tokens, score) of the eight retrieved chunks: 15,900 in all, the first one oversized.
CHUNKS = [(5200, 0.91), (1500, 0.88), (1400, 0.85), (1300, 0.8), (1600, 0.74), (1700, 0.7), (1500, 0.66), (1700, 0.6)]
#: Tokens of the ten exchanges: 12,300 in all.
EXCHANGES = [900, 1180, 940, 1510, 760, 1020, 1400, 1500, 1590, 1500]


def sized(tok: Tokenizer, base: str, n: int) -> str:
    """Real text of exactly `n` tokens: `base` repeated, cut on a token boundary."""
    text = base
    while tok.count(text) < n + 8:
        text += base
    cut = tok.truncate(text, n)
    # A prefix can tokenize a little shorter than the cut: top up one token at a time.
    while tok.count(cut) < n:
        cut += " x"
    return cut


def seed000_request(tok: Tokenizer) -> tuple[list[Segment], Budget]:
    segments = [
        Segment(sized(tok, _SYSTEM, 1462), PromptLayer.SYSTEM),
        Segment(sized(tok, _TOOLS, 2840), PromptLayer.TOOLS),
    ]
    for i, (n, score) in enumerate(CHUNKS, start=1):
        segments.append(Segment(sized(tok, _CHUNK, n), PromptLayer.RETRIEVED, key=f"chunk{i}", score=score))
    for i, n in enumerate(EXCHANGES, start=1):
        group = f"ex{i}"
        segments.append(Segment(sized(tok, _ASK, n // 2), PromptLayer.CONVERSATION, group=group))
        segments.append(Segment(sized(tok, _ANSWER, n - n // 2), PromptLayer.CONVERSATION, group=group))
    return segments, Budget(32_000, 4_000, caps={PromptLayer.RETRIEVED: 14_000})
