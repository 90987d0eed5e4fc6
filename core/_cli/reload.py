"""``mcp-providers reload --url``: ask a server serving HTTP to reload, and print what it did."""

from __future__ import annotations

import os
import re

from rich.console import Console

TIMEOUT_SECONDS = 120.0
"""How long a reload may take to answer (it rescans entry points and composes), in seconds."""


def _hide_password(text: str) -> str:
    """``text`` with the password of any ``scheme://user:password@host`` in it replaced by ``***``."""
    return re.sub(r"(//[^/@:\s]*):[^/@\s]*@", r"\1:***@", text)


def signal_reload(out: Console, err: Console, pid: int) -> int:
    """Send ``SIGHUP`` to ``pid`` if it is an mcp-providers server (its command line names it,
    read from ``/proc``; where there is none, not checked): a process without a handler for it,
    the default, is ended by a ``SIGHUP``, so a mistyped pid must not get one.

    :returns: the exit code: 0 sent, 2 not sent (no such process, not a server, not permitted).
    """
    import signal

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            command = file.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = None  # no /proc here, or no such process: os.kill says which
    if command is not None and "mcp-providers" not in command and "mcp_providers" not in command:
        err.print(f"error: process {pid} is not an mcp-providers server (it runs {command[:200]!r}); not "
                  f"signalled. If it is one, send the signal yourself: kill -HUP {pid}",
                  markup=False, highlight=False)  # fmt: skip
        return 2
    try:
        os.kill(pid, signal.SIGHUP)
    except OSError as exc:
        err.print(f"error: cannot signal process {pid}: {exc.strerror or exc}", markup=False, highlight=False)
        return 2
    out.print(f"sent SIGHUP to {pid}; the server's log says what the reload did", markup=False, highlight=False)
    return 0


def ask_reload(out: Console, err: Console, url: str, token_env: str, *, cluster: bool = False) -> int:
    """POST ``<url>/admin/reload`` with the bearer token in ``$token_env``; print the attempt
    (with ``cluster``, ``?cluster=1``: the server announces it to every other replica too).

    :returns: the exit code: 0 applied or unchanged, 1 the reload failed (its problems printed)
        or, with ``cluster``, was not announced, 2 the request itself failed (no token,
        unreachable, refused).
    """
    import httpx2

    token = os.environ.get(token_env, "")
    if not token:
        err.print(f"error: ${token_env} is not set; put the token [server.admin] token_env names in it",
                  markup=False, highlight=False)  # fmt: skip
        return 2
    target = url.rstrip("/") + "/admin/reload" + ("?cluster=1" if cluster else "")
    try:
        response = httpx2.post(target, headers={"authorization": f"Bearer {token}"}, timeout=TIMEOUT_SECONDS)
    except httpx2.HTTPError as exc:
        err.print(
            _hide_password(f"error: cannot reach {target}: {type(exc).__name__}: {exc}"), markup=False, highlight=False
        )
        return 2
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code not in (200, 422) or "outcome" not in body:
        why = body.get("error") if isinstance(body, dict) else None
        err.print(_hide_password(f"error: {target} answered {response.status_code}: {why or response.text[:200]}"),
                  markup=False, highlight=False)  # fmt: skip
        return 2
    lines = [f"reload {body['outcome']}: config {body['digest'] or '-'}, generation {body['generation']}"]
    lines += [f"  changed: {', '.join(body['changed'])}"] if body.get("changed") else []
    lines += ["  announced to the other replicas of the cluster"] if body.get("announced") else []
    lines += [f"  problem: {p}" for p in body.get("problems", ())]
    lines += [f"  warning: {w}" for w in body.get("warnings", ())]
    for line in lines:
        out.print(line, markup=False, highlight=False)
    return 1 if body["outcome"] == "failed" or (cluster and not body.get("announced")) else 0
