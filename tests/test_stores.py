"""ctxfast.stores: memory, file and Redis stores share one interface and one contract.

Restore = snapshot + deltas gives the live window exactly; a save against a stale version is
refused; ``update`` redoes a lost turn, so two processes serving one conversation never lose
one; compaction, TTL and damaged records. The Redis tests run against a real ``redis-server``:
``CTXFAST_REDIS_URL`` when set (CI starts one), else one started here from ``redis-server`` on
PATH (Debian: ``apt-get install redis-server``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ctxfast
from ctxfast import ContextWindow, PromptLayer as L, Segment as S
from ctxfast.stores import FileStore, MemoryStore, WindowStore


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("CTXFAST_REDIS_URL")
    if url:
        yield url
        return
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("the Redis store tests need redis-server on PATH (Debian: apt-get install redis-server) "
                    "or CTXFAST_REDIS_URL naming a running server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.02)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def make_redis(url: str, **kw: object) -> WindowStore:
    import redis

    from ctxfast.stores import RedisStore

    client = redis.Redis.from_url(url)
    prefix = f"test-{os.getpid()}-{time.monotonic_ns()}:"
    return RedisStore(client, prefix=prefix, **kw)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "file", "redis"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path):
    def make(**kw: object) -> WindowStore:
        if request.param == "memory":
            return MemoryStore(**kw)  # type: ignore[arg-type]
        if request.param == "file":
            return FileStore(tmp_path / "windows", **kw)  # type: ignore[arg-type]
        return make_redis(request.getfixturevalue("redis_url"), **kw)
    make.kind = request.param  # type: ignore[attr-defined]
    return make


def window() -> ContextWindow:
    # A system prompt that outweighs a turn, as real ones do, so deltas stay deltas.
    w = ContextWindow(1200)
    w.admit(S("you are terse and exact; " * 80, L.SYSTEM))
    return w


def turn(w: ContextWindow, i: int) -> None:
    w.admit_many([S(f"question {i}", L.CURRENT_TURN, key=f"q{i}"),
                  S(f"chunk {i % 5} " * 6, L.RETRIEVED, key=f"c{i % 5}", score=0.1 * (i % 7), meta={"i": i}),
                  S(f"answer {i} " * 4, L.CONVERSATION, key=f"a{i}")])
    w.fit()


def test_snapshot_plus_deltas_is_the_live_window(make_store) -> None:
    store = make_store(compact_every=1000)
    live = window()
    checkout = store.new(live)
    seen = 0
    for i in range(30):
        turn(live, i)
        store.save("conv", checkout)
        back = store.load("conv")
        assert back is not None and back.window.to_bytes() == live.to_bytes()
        assert back.deltas == checkout.deltas
        seen = max(seen, back.deltas)
    assert seen >= 3  # restored through a chain of deltas, not only from snapshots
    assert [s.meta for s in back.window.segments(L.RETRIEVED)] == [s.meta for s in live.segments(L.RETRIEVED)]


def test_a_delta_is_a_fraction_of_the_snapshot(make_store) -> None:
    store = make_store(compact_every=1000)
    checkout = store.new(window())
    for i in range(20):
        turn(checkout.window, i)
        store.save("conv", checkout)
    assert checkout.deltas >= 3 and checkout.delta_bytes / checkout.deltas < checkout.snapshot_bytes / 4


def test_compaction_rewrites_the_snapshot_and_keeps_the_state(make_store) -> None:
    store = make_store(compact_every=4)
    checkout = store.new(window())
    for i in range(11):
        turn(checkout.window, i)
        store.save("conv", checkout)
        assert checkout.deltas < 4
        back = store.load("conv")
        assert back is not None and back.deltas == checkout.deltas
        assert back.window.to_bytes() == checkout.window.to_bytes()


def test_a_stale_save_is_refused_and_update_redoes_the_turn(make_store) -> None:
    store = make_store()
    store.update("conv", lambda w: turn(w, 0), create=window)
    a, b = store.load("conv"), store.load("conv")
    assert a is not None and b is not None
    turn(a.window, 1)
    store.save("conv", a)
    turn(b.window, 2)
    with pytest.raises(ctxfast.StoreConflictError):
        store.save("conv", b)
    store.update("conv", lambda w: turn(w, 2), create=window)
    final = store.load("conv")
    assert final is not None
    for key in ("q1", "q2"):
        final.window.why(key)  # both turns are in: neither was lost


def test_a_new_conversation_created_twice_conflicts(make_store) -> None:
    store = make_store()
    first, second = store.new(window()), store.new(window())
    turn(first.window, 0)
    turn(second.window, 1)
    store.save("conv", first)
    with pytest.raises(ctxfast.StoreConflictError):
        store.save("conv", second)


def test_a_recreated_conversation_refuses_a_writer_from_before(make_store) -> None:
    store = make_store()
    store.update("conv", lambda w: turn(w, 0), create=window)
    old = store.load("conv")
    assert old is not None
    assert store.delete("conv") and not store.delete("conv")
    store.update("conv", lambda w: turn(w, 0), create=window)
    turn(old.window, 1)
    with pytest.raises(ctxfast.StoreConflictError):
        store.save("conv", old)


def test_session_saves_when_the_block_ends(make_store) -> None:
    store = make_store()
    with store.session("conv", create=window) as w:
        turn(w, 0)
    with store.session("conv", create=window) as w:
        assert w.why("q0").status == "held"
        turn(w, 1)
    loaded = store.load("conv")
    assert loaded is not None and loaded.window.why("q1")


def test_ttl_forgets_idle_conversations(make_store) -> None:
    store = make_store(ttl=0.3)
    store.update("conv", lambda w: turn(w, 0), create=window)
    assert store.load("conv") is not None
    time.sleep(1.2 if make_store.kind == "file" else 0.6)
    assert store.load("conv") is None


def test_bad_arguments_are_ctxfast_errors(make_store) -> None:
    store = make_store()
    for bad in ("", None, 5):
        with pytest.raises(ctxfast.InvalidArgumentError):
            store.load(bad)  # type: ignore[arg-type]
    with pytest.raises(ctxfast.InvalidArgumentError):
        make_store(compact_every=0)
    with pytest.raises(ctxfast.InvalidArgumentError):
        make_store(ttl=-1)


def three_saved_turns(tmp_path: Path):
    store = FileStore(tmp_path)
    checkout = store.new(window())
    for i in range(3):
        turn(checkout.window, i)
        store.save("conv", checkout)
    return store, checkout, next(tmp_path.glob("*.ctxw"))


def test_a_damaged_file_record_is_refused_not_loaded(tmp_path: Path) -> None:
    store, _, path = three_saved_turns(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(ctxfast.CtxfastError):
        store.load("conv")


def test_a_frame_cut_short_by_a_crash_is_ignored_then_cut_off(tmp_path: Path) -> None:
    store, checkout, path = three_saved_turns(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole + b"\x00\x00\x10\x00\x00\x05vers")  # a frame header and no more
    back = store.load("conv")
    assert back is not None and back.window.to_bytes() == checkout.window.to_bytes()
    turn(back.window, 3)
    store.save("conv", back)
    again = store.load("conv")
    assert again is not None and again.window.to_bytes() == back.window.to_bytes()


RACER = textwrap.dedent("""
    import sys
    from ctxfast import ContextWindow, PromptLayer as L, Segment as S
    kind, where, me, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if kind == "file":
        from ctxfast.stores import FileStore
        store = FileStore(where)
    else:
        import redis
        from ctxfast.stores import RedisStore
        store = RedisStore(redis.Redis.from_url(where), prefix=sys.argv[5])
    def make():
        return ContextWindow(100_000)
    for i in range(n):
        store.update("shared", lambda w: (w.admit(S(f"{me} turn {i}", L.CONVERSATION, key=f"{me}-{i}")), w.fit()),
                     create=make, retries=1000)
""")


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_two_processes_serving_one_conversation_never_lose_a_turn(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    n = 40
    if kind == "file":
        where, extra, store = str(tmp_path), [], FileStore(tmp_path)
    else:
        import redis

        from ctxfast.stores import RedisStore

        where = request.getfixturevalue("redis_url")
        prefix = f"race-{os.getpid()}-{time.monotonic_ns()}:"
        extra, store = [prefix], RedisStore(redis.Redis.from_url(where), prefix=prefix)
    procs = [subprocess.Popen([sys.executable, "-c", RACER, kind, where, me, str(n), *extra])
             for me in ("left", "right")]
    assert [p.wait(120) for p in procs] == [0, 0]
    loaded = store.load("shared")
    assert loaded is not None
    w = loaded.window
    keys = {s.key for s in w.segments()}
    assert keys == {f"{me}-{i}" for me in ("left", "right") for i in range(n)}, "a turn was lost"
    assert w.ledger.admitted == 2 * n
