"""This replica's name: what ``/status``, traces and the cluster's log lines call it.

``MCP_PROVIDERS_REPLICA`` names it (the chart sets the pod's name there, compose and ``run-local``
``replica1``...); unset, ``HOSTNAME`` (the pod's name under Kubernetes, the container's id under
Docker), else the host's name. The name is for people; the cluster's own id of the process
(:attr:`~.cluster.RedisBackend.replica`) adds the pid and a random suffix, so two processes of one
name never share a lease token.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

REPLICA_ENV = "MCP_PROVIDERS_REPLICA"
"""The environment variable that names the replica (also the prefix of its session ids)."""


def replica_name(env: Mapping[str, str] | None = None) -> str:
    """``MCP_PROVIDERS_REPLICA``, else ``HOSTNAME``, else :func:`socket.gethostname` (blank values
    are skipped); read from ``env`` (default :data:`os.environ`)."""
    env = os.environ if env is None else env
    for variable in (REPLICA_ENV, "HOSTNAME"):
        value = env.get(variable, "").strip()
        if value:
            return value
    return socket.gethostname()
