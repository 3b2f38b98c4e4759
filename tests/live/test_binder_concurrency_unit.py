"""`caldera run` keeps 64 bindings in flight by default (kube-scheduler runs each binding cycle in
its own goroutine, without a bound). With 16, the live benchmark's heartbeat workload was held to
16 / bind latency: the scheduling loop sat idle while every bind thread waited on a loaded API
server (docs/live-benchmarks.md)."""
from __future__ import annotations

import threading

from click.testing import CliRunner

from caldera.cli.run import run as run_cmd
from caldera.live.app import RunOptions
from caldera.live.binder import Binder
from caldera.live.client import _new_configuration
from tests.builders import make_node, make_pod, make_table


class SlowApi:
    """Every binding POST waits until `want` of them are in flight at once (or gives up)."""

    def __init__(self, want: int, timeout: float):
        self.barrier = threading.Barrier(want, timeout=timeout)
        self.broken = 0
        self.lock = threading.Lock()

    def request(self, method, path, body=None):
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            with self.lock:
                self.broken += 1
        return 201, {}


class FakeCache:
    def __init__(self, table):
        self.table = table

    def assume(self, pod, node):
        pass

    def forget(self, pod):
        pass


def _bind_all(workers: int | None, want: int, timeout: float = 10) -> SlowApi:
    table = make_table([make_node("n", cpu="1000", pods=1000)])
    api = SlowApi(want, timeout)
    kw = {} if workers is None else {"workers": workers}
    b = Binder(api, FakeCache(table), **kw)
    for i in range(want):
        assert b.submit(make_pod(f"p{i}", cpu="1"), "n")
    b.shutdown(timeout=30)
    return api


def test_the_binder_keeps_64_binds_in_flight_by_default():
    assert _bind_all(None, 64).broken == 0
    assert RunOptions().bind_workers == 64


def test_a_smaller_pool_cannot_reach_that_concurrency():
    # the barrier cannot fill with 16 threads: it times out and every waiting bind sees it broken
    assert _bind_all(16, 64, timeout=1).broken > 0


def test_cli_default_and_connection_pool_cover_the_bind_workers():
    opt = next(p for p in run_cmd.params if p.name == "bind_workers")
    assert opt.default == 64
    # every bind worker (up to the flag's maximum, 256) plus watches and status writers keep a
    # connection of their own
    assert _new_configuration().connection_pool_maxsize >= opt.type.max + 32
    assert "--bind-workers INTEGER RANGE" in CliRunner().invoke(run_cmd, ["--help"]).output
