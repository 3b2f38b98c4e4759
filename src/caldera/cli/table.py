"""`-o table`: a readable summary of a pass (rich)."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table


def render(data: dict, console: Console | None = None) -> None:
    con = console or Console()
    t = Table(title="Scheduling pass", show_lines=False)
    t.add_column("Pod", style="bold")
    t.add_column("Result")
    t.add_column("Node / reason", overflow="fold")
    for b in data["bindings"]:
        t.add_row(b["pod"], "[green]bound[/]", b["node"])
    noms = {n["pod"]: n["node"] for n in data["nominations"]}
    for u in data["unschedulable"]:
        extra = f" (nominated to {noms[u['pod']]})" if u["pod"] in noms else ""
        t.add_row(u["pod"], "[red]pending[/]", u["message"] + extra)
    for p in data.get("pipelined", []):
        t.add_row(p["pod"], "[yellow]pipelined[/]", p["node"])
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
        g.add_column("Message", overflow="fold")
        for pg in data["podGroups"]:
            msg = pg.get("message", "")
            for ev in pg.get("events", []):
                msg += f"{chr(10) if msg else ''}event {ev['reason']}: {ev['message']}"
            g.add_row(pg["name"], pg.get("phase", ""), msg)
        con.print(g)
    for pod, ex in (data.get("explain") or {}).items():
        _explain_table(con, pod, ex)


SHORT = {"NodeResourcesFit": "Fit", "NodeResourcesBalancedAllocation": "Balanced",
         "TaintToleration": "Taint", "NodeAffinity": "NodeAff", "PodTopologySpread": "Spread",
         "InterPodAffinity": "PodAff", "ImageLocality": "Image"}


def _explain_table(con: Console, pod: str, ex: dict) -> None:
    scores = ex.get("scores") or {}
    plugins: list[str] = []
    for row in scores.values():
        for k in row:
            if k != "total" and k not in plugins:
                plugins.append(k)
    t = Table(title=f"Explain {pod}", caption="per-plugin scores; total is the weighted sum the scheduler ranks by"
              if plugins else None)
    t.add_column("Node", style="bold")
    for p in plugins:
        t.add_column(SHORT.get(p, p), justify="right")
    if scores:
        t.add_column("total", justify="right", style="bold")
    t.add_column("Filter", overflow="fold")
    tot = ["total"] if scores else []
    ranked = sorted(scores.items(), key=lambda kv: -kv[1].get("total", 0))
    for node, row in ranked:
        t.add_row(node, *[str(row.get(p, "-")) for p in plugins + tot], "[green]passed[/]")
    for node, reason in sorted((ex.get("filtered") or {}).items()):
        t.add_row(node, *["" for _ in plugins + tot], f"[red]{reason}[/]")
    con.print(t)
