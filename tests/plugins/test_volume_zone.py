"""VolumeZone: kube's volumezone/volume_zone_test.go (TestSingleZone, TestMultiZone,
TestWithBinding). Object names are lower-cased (the loader validates them as the API server does);
a StorageClass without volumeBindingMode is Immediate here (the API server's default), so
TestWithBinding's "VolumeBindingMode not set" case becomes the Immediate-class case."""
from __future__ import annotations

import pytest

from caldera.framework.status import Status

from ..builders import make_node, run_filter
from .volume_helpers import pv, pvc, sc, sched_for, vpod

BZ, BR = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
Z, R = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
CONFLICT = Status.unresolvable("node(s) had no available volume zone")

SINGLE = [pv("vol-1", labels={BZ: "us-west1-a"}), pv("vol-2", labels={BR: "us-west1", "uselessLabel": "none"}),
          pv("vol-3", labels={BR: "us-west1"}), pv("vol-stable-1", labels={Z: "us-west1-a"}),
          pv("vol-stable-2", labels={R: "us-west1", "uselessLabel": "none"}),
          pv("vol-stable-3", labels={Z: "us-west1-a", R: "us-west1-a"})]
SINGLE += [pvc(n, bound=v) for n, v in (("pvc-1", "vol-1"), ("pvc-2", "vol-2"), ("pvc-3", "vol-3"),
                                         ("pvc-4", "vol-not-exist"), ("pvc-stable-1", "vol-stable-1"),
                                         ("pvc-stable-2", "vol-stable-2"), ("pvc-stable-3", "vol-stable-3"))]
MULTI = [pv("vol-1", labels={BZ: "us-west1-a"}), pv("vol-2", labels={BZ: "us-west1-b", "uselessLabel": "none"}),
         pv("vol-3", labels={BZ: "us-west1-c__us-west1-a"}), pv("vol-stable-1", labels={Z: "us-west1-a"}),
         pv("vol-stable-2", labels={Z: "us-west1-c__us-west1-a"})]
MULTI += [pvc(n, bound=v) for n, v in (("pvc-1", "vol-1"), ("pvc-2", "vol-2"), ("pvc-3", "vol-3"),
                                        ("pvc-stable-1", "vol-stable-1"), ("pvc-stable-2", "vol-stable-2"))]


def run(objs, claim, labels):
    vols = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}] if claim else []
    s = sched_for([make_node("host1", labels=labels)], objs, plugins=("VolumeZone",))
    return run_filter(s, vpod("pod-1", vols))["host1"]


@pytest.mark.parametrize("claim,labels,want", [
    (None, {BZ: "us-west1-a"}, None),
    ("pvc-1", {}, None),
    ("pvc-1", {BZ: "us-west1-a", "uselessLabel": "none"}, None),
    ("pvc-2", {BR: "us-west1", "uselessLabel": "none"}, None),
    ("pvc-2", {BR: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
    ("pvc-1", {BZ: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
    ("pvc-stable-1", {Z: "us-west1-a", "uselessLabel": "none"}, None),
    ("pvc-stable-2", {R: "us-west1", "uselessLabel": "none"}, None),
    ("pvc-stable-2", {R: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
    ("pvc-stable-1", {Z: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
    ("pvc-stable-3", {Z: "us-west1-a"}, CONFLICT),
    ("pvc-stable-1", {BZ: "us-west1-a"}, CONFLICT),
    ("pvc-1", {Z: "us-west1-a"}, None),
    ("pvc-1", {Z: "us-west1-b"}, CONFLICT),
    ("pvc-4", {Z: "us-west1-b"}, Status.unresolvable('persistentvolume "vol-not-exist" not found')),
], ids=["pod without volume", "node without labels", "beta zone label matched", "beta region label matched",
        "beta region label doesn't match", "beta zone label doesn't match", "zone label matched",
        "region label matched", "region label doesn't match", "zone label doesn't match",
        "pv with zone and region, node with only zone", "pv with zone,node with beta zone",
        "pv with beta label,node with ga label, matched", "pv with beta label,node with ga label, don't match",
        "pv does not exist"])
def test_single_zone(claim, labels, want):
    assert run(SINGLE, claim, labels) == want


@pytest.mark.parametrize("claim,labels,want", [
    ("pvc-3", {}, None),
    ("pvc-3", {BZ: "us-west1-a", "uselessLabel": "none"}, None),
    ("pvc-1", {BZ: "us-west1-b", "uselessLabel": "none"}, CONFLICT),
    ("pvc-stable-2", {Z: "us-west1-a", "uselessLabel": "none"}, None),
    ("pvc-stable-1", {Z: "us-west1-b", "uselessLabel": "none"}, CONFLICT),
], ids=["node without labels", "beta zone label matched", "beta zone label doesn't match", "zone label matched",
        "zone label doesn't match"])
def test_multi_zone(claim, labels, want):
    assert run(MULTI, claim, labels) == want


BINDING = [sc("class-wait"), sc("class-immediate", mode="Immediate"), pv("vol-1", labels={BZ: "us-west1-a"}),
           pvc("pvc-1", bound="vol-1"), pvc("pvc-nosc", "class-0"), pvc("pvc-emptysc", ""),
           pvc("pvc-waitsc", "class-wait"), pvc("pvc-immediatesc", "class-immediate")]


@pytest.mark.parametrize("claim,want", [
    ("pvc-1", None),
    ("pvc-emptysc", Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")),
    ("pvc-nosc", Status.unresolvable('storageclass.storage.k8s.io "class-0" not found')),
    ("pvc-immediatesc", Status.unresolvable("PersistentVolume had no name")),
    ("pvc-waitsc", None),
    ("pvc-missing", Status.unresolvable('persistentvolumeclaim "pvc-missing" not found')),
], ids=["label zone failure domain matched", "unbound volume empty storage class", "unbound volume no storage class",
        "unbound volume immediate binding mode", "unbound volume wait binding mode", "missing claim"])
def test_with_binding(claim, want):
    assert run(BINDING, claim, {BZ: "us-west1-a", "uselessLabel": "none"}) == want


def test_empty_zone_in_label_is_ignored():
    assert run([pv("v", labels={Z: "a____b"}), pvc("c", bound="v")], "c", {Z: "x"}) is None
