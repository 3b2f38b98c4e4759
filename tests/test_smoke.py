from caldera.framework.status import Code

from .builders import make_node, make_pod, make_scheduler, make_table, run_filter, run_score


def test_fit_filter_and_least_allocated_score():
    n1 = make_node("n1", cpu="4", memory="8Gi")
    n2 = make_node("n2", cpu="2", memory="8Gi")
    t = make_table([n1, n2], [make_pod("r", cpu="1500m", memory="1Gi", node="n2")])
    s = make_scheduler(t, {"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"],
                           "preScore": ["NodeResourcesFit"], "score": ["NodeResourcesFit"]})
    pod = make_pod("p", cpu="1", memory="1Gi")
    f = run_filter(s, pod)
    assert f["n1"] is None
    assert f["n2"].code == Code.UNSCHEDULABLE and f["n2"].reasons == ("Insufficient cpu",)
    sc = run_score(s, pod, ["n1"])
    # cpu: (4000-1000)*100/4000 = 75; memory: (8Gi-1Gi)*100/8Gi = 87 -> (75+87)//2 = 81
    assert sc["NodeResourcesFit"]["n1"] == 81
