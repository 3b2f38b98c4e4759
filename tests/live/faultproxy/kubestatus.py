"""The metav1.Status bodies kube-apiserver sends for the error codes FaultProxy injects."""
from __future__ import annotations

import json
from typing import Any

# code -> (reason, message); 409 and 429 are built specially below
_STATUS = {410: ("Expired", "too old resource version"),
           500: ("InternalError", "Internal error occurred: injected fault (caldera faultproxy)"),
           503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
           504: ("Timeout", "Timeout: request did not complete within requested timeout - context deadline exceeded")}
SUPPORTED_CODES = frozenset({409, 429, *_STATUS})


def parse_api_path(path: str) -> dict:
    """/api/v1/namespaces/ns/pods/name/binding -> {group, resource, name, subresource, namespace}."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return {"group": "", "resource": "", "name": "", "subresource": "", "namespace": ""}
    if rest[:1] == ["watch"]:
        rest = rest[1:]
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    return {"group": group, "resource": rest[0] if rest else "", "name": rest[1] if len(rest) > 1 else "",
            "subresource": "/".join(rest[2:]), "namespace": ns}


def status_object(code: int, method: str, path: str, body: bytes | None) -> dict:
    """The metav1.Status the API server would send for `code` on this request."""
    info = parse_api_path(path)
    try:
        obj = json.loads(body) if body else {}
        obj = obj if isinstance(obj, dict) else {}
    except ValueError:
        obj = {}
    resource, group, name = info["resource"], info["group"], info["name"]
    qualified = f"{resource}.{group}" if group else resource
    details: dict = {}
    if code == 409:
        if resource == "pods" and info["subresource"] == "binding":
            # BindingREST.assignPod: the pod already has a node (e.g. an earlier bind went through)
            node = (obj.get("target") or {}).get("name", "")
            message = (f'Operation cannot be fulfilled on pods/binding "{name}": '
                       f'pod {name} is already assigned to node "{node}"')
            reason, details = "Conflict", {"name": name, "kind": "pods/binding"}
        elif method == "POST" and not name:
            name = (obj.get("metadata") or {}).get("name", "")
            message, reason = f'{qualified} "{name}" already exists', "AlreadyExists"
            details = {"name": name, "group": group, "kind": resource}
        else:
            message = (f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
                       "please apply your changes to the latest version and try again")
            reason, details = "Conflict", {"name": name, "group": group, "kind": resource}
    else:
        reason, message = _STATUS[code]
        if code == 500:   # apierrors.NewInternalError: the cause is repeated in details
            details = {"causes": [{"message": message.removeprefix("Internal error occurred: ")}]}
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason}
    details = {k: v for k, v in details.items() if v not in ("", None)}
    if details:
        status["details"] = details
    status["code"] = code
    return status
