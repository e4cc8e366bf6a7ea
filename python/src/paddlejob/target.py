"""Which cluster the client talks to: kubectl's rule, which the Go CLI
follows too (cmd/paddlejob/target.go).

1. A kubeconfig file or context named by the caller: that cluster.
2. Else the current context of $KUBECONFIG, else ~/.kube/config
   (`paddlejob up` makes the local cluster's context current, as kind and
   minikube do).
3. Else, inside a pod, the in-cluster service account.

Nothing falls back silently: with no kubeconfig and outside a pod, the
client raises :class:`paddlejob.NoClusterError`.
"""

from __future__ import annotations

import os
from typing import Optional


def kubeconfig_path(config_file: Optional[str]) -> str:
    """The kubeconfig to read: config_file, else $KUBECONFIG (several paths
    separated by ':' are merged), else ~/.kube/config — read when the client
    is made, not when the kubernetes package was imported."""
    return config_file or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


def context_namespace(config_file: Optional[str], context: Optional[str]) -> Optional[str]:
    """The namespace of a kubeconfig context (the current one by default)."""
    from kubernetes import config

    try:
        contexts, current = config.list_kube_config_contexts(config_file=config_file)
    except (config.ConfigException, OSError, KeyError, TypeError, ValueError):
        return None
    chosen = current
    if context:
        chosen = next((c for c in contexts if c.get("name") == context), None)
    if not chosen:
        return None
    ns = chosen.get("context", {}).get("namespace")
    return ns if isinstance(ns, str) and ns else None


def current_context(config_file: Optional[str]) -> Optional[str]:
    """The name of a kubeconfig's current context, None without one."""
    from kubernetes import config

    try:
        _, current = config.list_kube_config_contexts(config_file=config_file)
    except (config.ConfigException, OSError, KeyError, TypeError, ValueError):
        return None
    name = current.get("name") if isinstance(current, dict) else None
    return name if isinstance(name, str) and name else None
