"""``RedisStore``: parked windows in Redis, for a fleet of replicas.

Three keys per conversation, under one hash tag so a cluster keeps them in one slot:
``<prefix>{<id>}:v`` the version, ``:s`` the snapshot, ``:d`` a list of deltas. A load reads the
three in one MULTI/EXEC (a consistent view); a save is one Lua script, atomic on the server,
that checks the stored version is the one the writer loaded, then appends the delta (or replaces
snapshot and list), sets the version and renews the TTL. One round trip each way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxfast._core import Tokenizer
from ctxfast._errors import InvalidArgumentError, StoreError
from ctxfast.stores._base import Record, WindowStore

try:
    import redis
except ImportError as e:  # pragma: no cover - exercised by users without the extra
    raise ImportError('ctxfast.stores.RedisStore needs redis-py: pip install "ctxfast[redis]"') from e

# KEYS: version, snapshot, deltas. ARGV: expected version ("" for none), new version,
# "s" (snapshot) or "d" (delta), payload, ttl in ms (0: none).
_SAVE = """
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
if current ~= ARGV[1] then return 0 end
if ARGV[3] == 's' then
  redis.call('SET', KEYS[2], ARGV[4])
  redis.call('DEL', KEYS[3])
else
  redis.call('RPUSH', KEYS[3], ARGV[4])
end
redis.call('SET', KEYS[1], ARGV[2])
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return 1
"""


class RedisStore(WindowStore):
    """Windows parked in Redis through a ``redis.Redis`` client (``decode_responses=False``).

    Args:
        client: The redis-py client (its connection pool is shared by every call).
        prefix: Key prefix, so several applications can share a database.
    """

    def __init__(self, client: Any, *, prefix: str = "ctxfast:", tokenizer: Tokenizer | Callable[[str], int] | None = None,
                 ttl: float | None = None, compact_every: int = 16) -> None:
        super().__init__(tokenizer=tokenizer, ttl=ttl, compact_every=compact_every)
        if not isinstance(client, redis.Redis):
            raise InvalidArgumentError(f"client must be a redis.Redis, got {type(client).__name__}")
        if client.get_connection_kwargs().get("decode_responses"):
            raise InvalidArgumentError("the redis client must not decode responses: windows are stored as bytes")
        self.client = client
        self.prefix = prefix
        self._save = client.register_script(_SAVE)

    def _keys(self, conversation: str) -> list[str]:
        base = f"{self.prefix}{{{self._check_id(conversation)}}}"
        return [base + ":v", base + ":s", base + ":d"]

    def _read(self, conversation: str) -> Record | None:
        kv, ks, kd = self._keys(conversation)
        try:
            pipe = self.client.pipeline(transaction=True)
            pipe.get(kv)
            pipe.get(ks)
            pipe.lrange(kd, 0, -1)
            version, snapshot, deltas = pipe.execute()
        except redis.RedisError as e:
            raise StoreError(f"redis: cannot load {conversation!r}: {e}") from e
        if version is None:
            return None
        if snapshot is None:
            raise StoreError(f"redis: conversation {conversation!r} has a version but no snapshot")
        return Record(version.decode(), snapshot, deltas)

    def _write(self, conversation: str, expected: str | None, version: str, payload: bytes, snapshot: bool) -> bool:
        ttl_ms = 0 if self.ttl is None else max(1, int(self.ttl * 1000))
        try:
            done = self._save(keys=self._keys(conversation),
                              args=[expected or "", version, "s" if snapshot else "d", payload, ttl_ms])
        except redis.RedisError as e:
            raise StoreError(f"redis: cannot save {conversation!r}: {e}") from e
        return bool(done)

    def delete(self, conversation: str) -> bool:
        try:
            return bool(self.client.delete(*self._keys(conversation)))
        except redis.RedisError as e:
            raise StoreError(f"redis: cannot delete {conversation!r}: {e}") from e
