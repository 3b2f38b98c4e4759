"""Builders for the volume plugin tests: storage objects as manifests (the shapes of kube's
volumebinding/test_utils.go builders) and a scheduler whose Storage holds them."""
from __future__ import annotations

from caldera.api.storage import Storage, add_storage_object, resolve_default_class

from ..builders import make_node, make_pod, make_scheduler, make_table

HOSTNAME = "kubernetes.io/hostname"


def pv(name, cls="", *, phase=None, capacity=None, affinity=None, claim=None, labels=None, csi=None, modes=None,
       spec=None, annotations=None):
    sp = {"storageClassName": cls}
    if capacity:
        sp["capacity"] = {"storage": capacity}
    if affinity:
        sp["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": list(v)} for k, v in affinity.items()]}]}}
    if claim:
        ns, _, n = claim.rpartition("/")
        sp["claimRef"] = {"namespace": ns or "default", "name": n}
    if csi:
        sp["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if modes:
        sp["accessModes"] = list(modes)
    sp.update(spec or {})
    d = {"apiVersion": "v1", "kind": "PersistentVolume",
         "metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})}, "spec": sp}
    if phase:
        d["status"] = {"phase": phase}
    return d


def pvc(name, cls=None, *, bound=None, request=None, phase=None, modes=None, annotations=None, namespace="default",
        owner_uid=None):
    sp = {}
    if cls is not None:
        sp["storageClassName"] = cls
    ann = dict(annotations or {})
    if bound:
        sp["volumeName"] = bound
        ann["pv.kubernetes.io/bind-completed"] = "true"
    if request:
        sp["resources"] = {"requests": {"storage": request}}
    if modes:
        sp["accessModes"] = list(modes)
    meta = {"name": name, "namespace": namespace, "annotations": ann}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": owner_uid,
                                    "controller": True}]
    d = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": sp}
    if phase:
        d["status"] = {"phase": phase}
    return d


def sc(name, provisioner="kubernetes.io/no-provisioner", mode="WaitForFirstConsumer", topologies=None):
    d = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
         "provisioner": provisioner, "volumeBindingMode": mode}
    if topologies:
        d["allowedTopologies"] = [{"matchLabelExpressions": [{"key": k, "values": list(v)} for k, v in t.items()]}
                                  for t in topologies]
    return d


def csinode(name, drivers):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
                                 for d, c in drivers.items()]}}


def storage(objs) -> Storage:
    st = Storage()
    for o in objs:
        add_storage_object(st, o["kind"], o)
    resolve_default_class(st, st.pvcs.values())
    return st


def claim_vols(*names, ephemeral=()):
    vols = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)]
    vols += [{"name": n, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}} for n in ephemeral]
    return vols


def vpod(name, vols=(), **kw):
    return make_pod(name, spec={"volumes": list(vols)}, **kw)


def node(name, labels=None):
    return make_node(name, labels={HOSTNAME: name, **(labels or {})})


def sched_for(nodes, objs=(), pods=(), plugins=("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
                                                "VolumeZone")):
    t = make_table(nodes, pods)
    s = make_scheduler(t, {"preFilter": list(plugins), "filter": list(plugins),
                           **({"reserve": ["VolumeBinding"], "preBind": ["VolumeBinding"]}
                              if "VolumeBinding" in plugins else {})})
    s.storage = storage(objs)
    return s
