"""Which cluster the client talks to: the rule of the Go CLI
(cmd/paddlejob/target.go).

1. A kubeconfig file or context named by the caller: that cluster.
2. Else the local cluster (`paddlejob up`) when one runs in $PADDLEJOB_HOME
   (default ~/.paddlejob): its kubeconfig. It runs when its cluster.json
   lists processes that are all alive and its API server answers /readyz.
3. Else what kubectl would use: $KUBECONFIG or ~/.kube/config, or the
   in-cluster service account inside a pod.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional, Tuple


def local_home(home: Optional[str] = None) -> Path:
    """The local cluster's home: home, else $PADDLEJOB_HOME, else ~/.paddlejob."""
    if home:
        return Path(home)
    env = os.environ.get("PADDLEJOB_HOME")
    if env:
        return Path(env)
    return Path.home() / ".paddlejob"


def _proc_stat(pid: int) -> Optional[Tuple[str, int]]:
    """The state and start time (clock ticks) of a process, from /proc."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rfind(")") + 1 :].split()
    if len(fields) < 20:
        return None
    return fields[0], int(fields[19])


def _processes_alive(state: Any) -> bool:
    procs = state.get("processes") if isinstance(state, dict) else None
    if not isinstance(procs, list) or not procs:
        return False
    for p in procs:
        stat = _proc_stat(int(p.get("pid", 0)))
        if stat is None or stat[0] in ("Z", "X"):
            return False
        start = int(p.get("startTime", 0))
        if start and stat[1] != start:
            return False
    return True


def running_local_kubeconfig(home: Optional[str] = None) -> Optional[str]:
    """The kubeconfig of the local cluster when one runs and answers, else None."""
    h = local_home(home)
    try:
        state = json.loads((h / "cluster.json").read_text())
    except (OSError, ValueError):
        return None
    if not _processes_alive(state):
        return None
    kubeconfig = h / "kubeconfig"
    if not kubeconfig.is_file():
        return None
    from kubernetes import config

    try:
        api = config.new_client_from_config(config_file=str(kubeconfig))
        try:
            api.call_api("/readyz", "GET", auth_settings=["BearerToken"], _preload_content=False, _request_timeout=5)
        finally:
            api.close()
    except Exception:
        return None
    return str(kubeconfig)


def context_namespace(config_file: Optional[str], context: Optional[str]) -> Optional[str]:
    """The namespace of a kubeconfig context (the current one by default)."""
    from kubernetes import config

    try:
        contexts, current = config.list_kube_config_contexts(config_file=config_file)
    except Exception:
        return None
    chosen = current
    if context:
        chosen = next((c for c in contexts if c.get("name") == context), None)
    if not chosen:
        return None
    ns = chosen.get("context", {}).get("namespace")
    return ns if isinstance(ns, str) and ns else None
