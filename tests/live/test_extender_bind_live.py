"""`caldera run` with an HTTP extender that has bindVerb (kube's extendersBinding): a pod the extender
is interested in is bound by the extender (a real HTTP server that POSTs the Binding to the API
server itself), not by Caldera's Binding; a pod it is not interested in gets Caldera's Binding; an
extender's Error fails the bind and the pod is tried again."""
from __future__ import annotations

import threading

import pytest

from caldera.live.client import ApiError

from ..extender_server import ExtenderServer
from .kube import (
    clean_cluster,
    create_node,
    delete_nodes,
    events_for,
    get_pod,
    kube_profile,
    live_scheduler,
    namespace,
    pod_body,
    tag,
    wait_until,
)

WIDGET = "example.com/widget"


def _widget_pod(ns, name, sched):
    body = pod_body(ns, name, sched)
    res = body["spec"]["containers"][0]["resources"]
    res["requests"][WIDGET] = "1"
    res["limits"] = {WIDGET: "1"}
    return body



@pytest.fixture(autouse=True)
def _empty_cluster(api):
    """This test reads the whole cluster: it starts from an empty one (earlier modules leave
    their nodes and pods on the control plane the session shares)."""
    clean_cluster(api)

def test_extender_with_bind_verb_binds_the_pods_it_is_interested_in(api, tmp_path):
    t = tag()
    sched = f"caldera-{t}"
    ns = namespace(api, f"extbind-{t}")
    nodes = [f"extbind-{t}-{i}" for i in range(2)]
    for n in nodes:
        create_node(api, n, cpu="4", extra={WIDGET: "4"})
    lock = threading.Lock()
    refuse = {"first": True}

    def bind(args):
        with lock:
            if args["PodName"] == "flaky" and refuse["first"]:
                refuse["first"] = False
                return {"Error": "widget controller busy"}
        try:
            api.request("POST", f"/api/v1/namespaces/{args['PodNamespace']}/pods/{args['PodName']}/binding",
                        {"apiVersion": "v1", "kind": "Binding",
                         "metadata": {"name": args["PodName"], "namespace": args["PodNamespace"],
                                      "uid": args["PodUID"]},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]}})
        except ApiError as e:
            return {"Error": str(e)}
        return {}

    ext = ExtenderServer({"bind": bind})
    extra = (f"extenders:\n- urlPrefix: {ext.url}\n  bindVerb: bind\n"
             f"  managedResources:\n  - name: {WIDGET}\n")
    try:
        with live_scheduler(api, kube_profile(tmp_path, sched, extra)) as app:
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", _widget_pod(ns, "widgety", sched))
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", pod_body(ns, "plain", sched))
            wait_until(lambda: all((get_pod(api, ns, n)["spec"].get("nodeName") or "") in nodes
                                   for n in ("widgety", "plain")), timeout=30, what="both pods bound")
            binds = [b for v, b in ext.calls if v == "bind"]
            # the extender bound the pod it manages a resource of, and only that one
            assert [(b["PodName"], b["PodNamespace"]) for b in binds] == [("widgety", ns)]
            assert binds[0]["Node"] == get_pod(api, ns, "widgety")["spec"]["nodeName"]
            assert binds[0]["PodUID"] == get_pod(api, ns, "widgety")["metadata"]["uid"]
            # the Scheduled event is written for a pod the extender bound, as for any bind
            ev = wait_until(lambda: [e for e in events_for(api, ns, "widgety") if e["reason"] == "Scheduled"],
                            what="a Scheduled event")
            assert ev[0]["note"].startswith(f"Successfully assigned {ns}/widgety to ")

            # an extender Error fails the bind: the pod is forgotten, queued again, then bound
            api.request("POST", f"/api/v1/namespaces/{ns}/pods", _widget_pod(ns, "flaky", sched))
            wait_until(lambda: (get_pod(api, ns, "flaky")["spec"].get("nodeName") or "") in nodes,
                       timeout=40, what="flaky bound on the second try")
            flaky = [b for v, b in ext.calls if v == "bind" and b["PodName"] == "flaky"]
            assert len(flaky) == 2
            assert app.loop.binder.failed == 1 and app.loop.binder.bound == 3
            assert not app.cache.assumed
    finally:
        ext.close()
        delete_nodes(api, nodes)
        try:
            api.request("DELETE", f"/api/v1/namespaces/{ns}")
        except ApiError:
            pass
