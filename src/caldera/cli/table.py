"""`-o table`: a readable summary of a pass (rich)."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table


def render(data: dict, console: Console | None = None) -> None:
    con = console or Console()
    t = Table(title="Scheduling pass", show_lines=False)
    t.add_column("Pod", style="bold")
    t.add_column("Result")
    t.add_column("Node / reason", overflow="fold")
    for b in data["bindings"]:
        devices = b.get("devices")      # the GPUs a pod with GPU demand took
        gpus = f" (GPU {', '.join(map(str, devices))})" if devices else ""
        if b.get("cpuset"):             # the CPUs Volcano's numa-aware plugin pinned
            gpus += f" (CPU {b['cpuset']})"
        if b.get("volumes"):            # the PVs / provisioning VolumeBinding chose
            gpus += " (" + ", ".join(f"{v['claim'].split('/', 1)[-1]} -> "
                                     f"{v['volume'] if 'volume' in v else 'new ' + v['provision']}"
                                     for v in b["volumes"]) + ")"
        t.add_row(b["pod"], "[green]bound[/]", b["node"] + gpus)
    noms = {n["pod"]: n["node"] for n in data["nominations"]}
    for u in data["unschedulable"]:
        extra = f" (nominated to {noms[u['pod']]})" if u["pod"] in noms else ""
        t.add_row(u["pod"], "[red]pending[/]", escape(u["message"] + extra))
    for p in data.get("pipelined", []):
        t.add_row(p["pod"], "[yellow]pipelined[/]", p["node"])
    for w in data.get("waiting", []):     # kube: assumed, waiting on Permit when the pass ended
        t.add_row(w["pod"], "[yellow]waiting[/]",
                  f"{w['node']} (Permit: {', '.join(w['plugins'])}; timeout {w['timeoutSeconds']:g}s)")
    con.print(t)
    if data["evictions"]:
        e = Table(title="Evictions")
        e.add_column("Victim")
        e.add_column("Reason")
        for ev in data["evictions"]:
            e.add_row(ev["pod"], ev["reason"])
        con.print(e)
    if data.get("podGroups"):
        g = Table(title="PodGroups")
        g.add_column("PodGroup")
        g.add_column("Phase")
        with_hn = any("hyperNode" in pg for pg in data["podGroups"])
        if with_hn:
            g.add_column("HyperNode")
        g.add_column("Message", overflow="fold")
        for pg in data["podGroups"]:
            msg = pg.get("message", "")
            for ev in pg.get("events", []):
                msg += f"{chr(10) if msg else ''}event {ev['reason']}: {ev['message']}"
            hn = [escape(pg.get("hyperNode", ""))] if with_hn else []
            g.add_row(pg["name"], pg.get("phase", ""), *hn, escape(msg))   # messages may hold "map[...]"
        con.print(g)
        for pg in data["podGroups"]:
            if pg.get("hyperNodes"):
                _hypernodes_table(con, pg)
    for pod, ex in (data.get("explain") or {}).items():
        _explain_table(con, pod, ex)


def _hypernodes_table(con: Console, pg: dict) -> None:
    """--explain: the HyperNodes allocate tried for a PodGroup with a network topology constraint."""
    t = Table(title=f"HyperNodes for {pg['name']}")
    t.add_column("HyperNode", overflow="fold", max_width=16)
    for c in ("Tier", "Result", "Score"):
        t.add_column(c)
    t.add_column("Why", overflow="fold", ratio=1)
    for e in pg["hyperNodes"]:
        t.add_row(escape(e["hyperNode"]), str(e["tier"]), e["result"], str(e.get("score", "")),
                  escape(e.get("reason", "")))
    con.print(t)


# Column headers of the explain table: plugin names shortened so a row fits 80 columns; the
# legend under each table spells out the ones it uses.
SHORT = {"NodeResourcesFit": "Fit", "NodeResourcesBalancedAllocation": "Balanced",
         "TaintToleration": "Taint", "NodeAffinity": "NodeAff", "PodTopologySpread": "Spread",
         "InterPodAffinity": "PodAff", "ImageLocality": "Image", "DynamicResources": "DRA",
         "GpuPacking": "Packing", "GpuClustering": "Cluster",     # GPU policies (docs/gpu.md)
         "GPUTopology": "GpuTopo",                                # GPU links (docs/gpu.md)
         # Volcano's nodeorder reports the kube scorers it wraps, NodeResourcesFit per strategy
         "NodeResourcesFit_LeastAllocated": "Fit(LA)", "NodeResourcesFit_MostAllocated": "Fit(MA)",
         "network-topology-aware": "NetTopo"}


def _legend(plugins: list[str]) -> str:
    """The caption under an explain table: what its shortened headers stand for, and how to
    read the scores."""
    names = [f"{SHORT[p]}={p}" for p in plugins if SHORT.get(p, p) != p]
    if "nodeorder" in plugins:      # a Volcano session: node-order plugins by conf name
        how = "total = sum of the conf's plugins; kube-named columns (0-100) are nodeorder's parts."
    else:
        how = "Scores 0-100, unweighted; total = weighted sum."
    return (", ".join(names) + ". " if names else "") + how


def _explain_table(con: Console, pod: str, ex: dict, padding: int = 1) -> None:
    scores = ex.get("scores") or {}
    plugins: list[str] = []
    for row in scores.values():
        for k in row:
            if k != "total" and k not in plugins:
                plugins.append(k)
    t = Table(title=f"Explain {pod}", caption=_legend(plugins) if plugins else None, padding=(0, padding))
    t.add_column("Node", style="bold")
    ranked = sorted(scores.items(), key=lambda kv: -kv[1].get("total", 0))
    for p in plugins + (["total"] if scores else []):
        # never cut a score short, nor a header (it folds onto a second line when space is short)
        width = max(len(str(row.get(p, "-"))) for _, row in ranked)
        t.add_column(SHORT.get(p, p), justify="right", min_width=width, overflow="fold",
                     style="bold" if p == "total" else None)
    t.add_column("Filter", overflow="fold")
    tot = ["total"] if scores else []
    for node, row in ranked:
        t.add_row(node, *[str(row.get(p, "-")) for p in plugins + tot], "[green]passed[/]")
    for node, reason in sorted((ex.get("filtered") or {}).items()):
        t.add_row(node, *["" for _ in plugins + tot], f"[red]{reason}[/]")
    if padding and Measurement.get(con, con.options.update_width(10_000), t).minimum > con.width:
        return _explain_table(con, pod, ex, padding=0)     # many plugins: no cell padding
    con.print(t)
