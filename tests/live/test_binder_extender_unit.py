"""live/binder.py with HTTP extenders that have bindVerb (kube's extendersBinding in the binding
cycle), against a real HTTP extender (tests/extender_server.py) and a fake API: who binds, what an
extender's error does, ignorable fallback, and the annotations a Binding would have carried."""
from __future__ import annotations

from caldera.config.types import ExtenderConfig
from caldera.engine.extenders import build_extenders
from caldera.live.binder import Binder
from tests.builders import make_node, make_pod, make_table
from tests.extender_server import ExtenderServer, dead_url


class FakeApi:
    def __init__(self, bound_to=None):
        self.requests = []
        self.bound_to = bound_to

    def request(self, method, path, body=None):
        self.requests.append((method, path, body))
        if method == "GET":
            return 200, {"spec": {"nodeName": self.bound_to}}
        return 201, {}


class FakeCache:
    def __init__(self, table):
        self.table = table
        self.assumed, self.forgotten = [], []

    def assume(self, pod, node):
        self.assumed.append(pod.key)

    def forget(self, pod):
        self.forgotten.append(pod.key)


def _binder(api, extenders, **kw):
    table = make_table([make_node("n1", cpu="8", extra={"example.com/w": "4"})])
    b = Binder(api, FakeCache(table), workers=1, **kw)
    b.extenders = build_extenders(extenders)
    return b


def _widget_pod(name):
    return make_pod(name, cpu="1", limits={"example.com/w": "1"})


def test_the_interested_extender_binds_and_no_binding_is_posted():
    ext = ExtenderServer({"bind": lambda body: {}})
    try:
        api = FakeApi()
        bound = []
        b = _binder(api, [ExtenderConfig(url_prefix=ext.url, bind_verb="bind",
                                         managed_resources=[("example.com/w", False)])],
                    on_bound=lambda pod, node: bound.append((pod.key, node)))
        w, plain = _widget_pod("w"), make_pod("plain", cpu="1")
        assert b.submit(w, "n1") and b.submit(plain, "n1")
        b.shutdown()
        calls = [body for verb, body in ext.calls if verb == "bind"]
        assert calls == [{"PodName": "w", "PodNamespace": "default", "PodUID": w.uid, "Node": "n1"}]
        # only the pod the extender is not interested in gets caldera's Binding
        assert [(m, p) for m, p, _ in api.requests] == [("POST", "/api/v1/namespaces/default/pods/plain/binding")]
        assert sorted(bound) == [("default/plain", "n1"), ("default/w", "n1")] and b.bound == 2
    finally:
        ext.close()


def test_an_extender_error_fails_the_bind_and_requeues():
    ext = ExtenderServer({"bind": lambda body: {"Error": "no widget"}})
    try:
        api = FakeApi(bound_to=None)
        requeued, failed = [], []
        b = _binder(api, [ExtenderConfig(url_prefix=ext.url, bind_verb="bind")],
                    requeue=lambda pod: requeued.append(pod.key),
                    on_failed=lambda pod, node, err: failed.append(str(err)))
        assert b.submit(make_pod("p", cpu="1"), "n1")
        b.shutdown()
        assert failed == ["no widget"] and requeued == ["default/p"] and b.failed == 1 and b.bound == 0
        assert b.cache.forgotten == ["default/p"]
        # no Binding was POSTed; the pod was re-read (to learn whether it is bound after all)
        assert [m for m, _, _ in api.requests] == ["GET"]
    finally:
        ext.close()


def test_an_ignorable_extender_that_fails_leaves_the_bind_to_the_binding():
    api = FakeApi()
    b = _binder(api, [ExtenderConfig(url_prefix=dead_url(), bind_verb="bind", ignorable=True,
                                     http_timeout=1.0)])
    assert b.submit(make_pod("p", cpu="1"), "n1")
    b.shutdown()
    assert [(m, p) for m, p, _ in api.requests] == [("POST", "/api/v1/namespaces/default/pods/p/binding")]
    assert b.bound == 1


def test_gpu_devices_are_patched_after_the_extender_bound():
    ext = ExtenderServer({"bind": lambda body: {}})
    try:
        node = make_node("g", cpu="8", labels={"nvidia.com/gpu.product": "T4"}, extra={"nvidia.com/gpu": "2"})
        table = make_table([node])
        pod = make_pod("s", cpu="1", limits={"nvidia.com/gpu": "1"})
        table.add_pod(pod, 0, fresh=True)
        api = FakeApi()
        b = Binder(api, FakeCache(table), workers=1)
        b.extenders = build_extenders([ExtenderConfig(url_prefix=ext.url, bind_verb="bind")])
        assert b.submit(pod, "g")
        b.shutdown()
        assert api.requests == [("PATCH", "/api/v1/namespaces/default/pods/s",
                                 {"metadata": {"annotations": {"caldera.dev/gpu-devices": "0"}}})]
    finally:
        ext.close()
