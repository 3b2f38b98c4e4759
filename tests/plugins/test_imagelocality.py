"""ImageLocality: the cases of kube's image_locality_test.go (TestImageLocalityPriority,
TestNormalizedImageName), the cache's size rule, and the default profile end to end."""
import hashlib

import pytest

from caldera.plugins.imagelocality import normalized_image_name

from ..builders import make_node, make_pod, make_scheduler, make_table, run_score

MB = 1024 * 1024


def img(size_mb, *names):
    return {"names": list(names), "sizeBytes": size_mb * MB}


NODE_40_300_2000 = [img(40, "gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"),
                    img(300, "gcr.io/300:latest", "gcr.io/300:v1"), img(2000, "gcr.io/2000:latest")]
NODE_250_10 = [img(250, "gcr.io/250:latest"), img(10, "gcr.io/10:latest", "gcr.io/10:v1")]
NODE_600_40_900 = [img(600, "gcr.io/600:latest"), img(40, "gcr.io/40:latest"), img(900, "gcr.io/900:latest")]
NODE_300_600_900 = [img(300, "gcr.io/300:latest"), img(600, "gcr.io/600:latest"), img(900, "gcr.io/900:latest")]
NODE_4000_30 = [img(4000, "gcr.io/4000:latest"), img(30, "gcr.io/30:latest")]
NODE_20_30_40 = [img(20, "gcr.io/20:latest"), img(30, "gcr.io/30:latest"), img(40, "gcr.io/40:latest")]
NO_IMAGES = None


def pod(images, init_images=()):
    cs = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    ics = [{"name": f"i{i}", "image": im} for i, im in enumerate(init_images)]
    return make_pod("p", containers=cs, init_containers=ics or None)


CASES = [
    ("two images spread on two nodes, prefer the larger image one", (["gcr.io/40", "gcr.io/250"],),
     [NODE_40_300_2000, NODE_250_10], [0, 5]),
    ("two images on one node, prefer this node", (["gcr.io/40", "gcr.io/300"],),
     [NODE_40_300_2000, NODE_250_10], [7, 0]),
    ("if exceed limit, use limit", (["gcr.io/10", "gcr.io/4000"],), [NODE_4000_30, NODE_250_10], [100, 0]),
    ("if exceed limit, use limit (with node which has no images present)", (["gcr.io/10", "gcr.io/4000"],),
     [NODE_4000_30, NODE_250_10, NO_IMAGES], [66, 0, 0]),
    ("pod with multiple large images, node2 is preferred", (["gcr.io/300", "gcr.io/600", "gcr.io/900"],),
     [NODE_600_40_900, NODE_300_600_900, NO_IMAGES], [32, 36, 0]),
    ("pod with multiple small images", (["gcr.io/30", "gcr.io/40"],), [NODE_20_30_40, NODE_4000_30], [1, 0]),
    ("include InitContainers: two images spread on two nodes, prefer the larger image one",
     (["gcr.io/30"], ["gcr.io/300"]), [NODE_40_300_2000, NODE_20_30_40], [6, 0]),
]


def _scores(p, node_images, args=None):
    nodes = [make_node(f"node{i + 1}", images=im) for i, im in enumerate(node_images)]
    s = make_scheduler(make_table(nodes), {"score": ["ImageLocality"]})
    got = run_score(s, p)["ImageLocality"]
    return [got[n.name] for n in nodes]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_image_locality_priority(case):
    _, pod_args, node_images, want = case
    assert _scores(pod(*pod_args), node_images) == want


def _digest(s):
    return "sha256:" + hashlib.sha256(s.encode()).hexdigest()


@pytest.mark.parametrize("inp, out", [
    ("root", "root:latest"),
    ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
    ("root:tag", "root:tag"),
    ("root@" + _digest("root"), "root@" + _digest("root")),
])
def test_normalized_image_name(inp, out):
    assert normalized_image_name(inp) == out


def test_untagged_pod_image_matches_latest_and_duplicates_count_twice():
    # pod image "gcr.io/300" (untagged) matches "gcr.io/300:latest"; listed twice -> counted twice
    # 1 node of 1: sum = 2 * 300Mi; 100 * (600Mi - 23Mi) / (2000Mi - 23Mi) = 29
    assert _scores(pod(["gcr.io/300", "gcr.io/300"]), [NODE_40_300_2000]) == [29]
    # a tag that is not on the node does not match
    assert _scores(pod(["gcr.io/300:v2"]), [NODE_40_300_2000]) == [0]


def test_size_from_first_node_listing_the_name():
    # kube's cache keeps the size first reported for a name: node1 says 500Mi, node2 says 900Mi.
    # spread 2/2 -> both nodes score 100 * (500Mi - 23Mi) / (1000Mi - 23Mi) = 48
    nodes = [[img(500, "app:v1")], [img(900, "app:v1")]]
    assert _scores(pod(["app:v1"]), nodes) == [48, 48]


def test_default_profile_prefers_node_with_image():
    nodes = [make_node("n1"), make_node("n2", images=[img(800, "big/app:1")]), make_node("n3")]
    s = make_scheduler(make_table(nodes), default=True)
    assert s.schedule_one(pod(["big/app:1"])).node == "n2"
    detail = run_score(s, make_pod("q", image="big/app:1"))["ImageLocality"]
    # 800Mi * 1/3 = 266.67Mi -> 100 * (266.67Mi - 23Mi) / (1000Mi - 23Mi) = 24
    assert detail == {"n1": 0, "n2": 24, "n3": 0}
