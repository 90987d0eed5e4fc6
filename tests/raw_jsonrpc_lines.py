"""The line loop the tests' raw JSON-RPC stdio servers share (``raw_stdio_upstream.py``,
``paged_stdio_upstream.py``, ``tasks_raw_upstream.py``, ``malformed_stdio_upstream.py``,
``oversize_stdio_upstream.py``): one JSON message a line on stdin, each
request answered on stdout. Those servers say exactly what they answer, malformed answers included,
where an SDK server would refuse to."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def send(obj: dict[str, object]) -> None:
    """Write one message as a line on stdout."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


NOTHING = object()
"""What ``answer`` returns to have the request answered with neither a result nor an error."""


Handler = Callable[[object, str, dict[str, Any]], None]
"""``handle(id, method, params)``: one request, answered now or later."""


def requests(handle: Handler, notified: Callable[[str], None] | None = None) -> None:
    """Hand each request on stdin to ``handle(id, method, params)`` until stdin ends (it answers, now
    or later, as it likes). Lines that are not JSON are skipped; ``notified(method)`` hears each
    notification; answers to questions of ours are dropped (none is asked)."""
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            if method is not None and notified is not None:
                notified(method)
            continue
        if method is not None:
            handle(ident, method, message.get("params") or {})


def serve(answer: Callable[[str, dict[str, Any]], Any], notified: Callable[[str], None] | None = None) -> None:
    """Answer each request on stdin with ``answer(method, params)`` until stdin ends: a result, or
    ``{"error": {...}}`` for an error answer (see :func:`requests` for the rest)."""

    def answered(ident: object, method: str, params: dict[str, Any]) -> None:
        result = answer(method, params)
        if result is NOTHING:
            send({"jsonrpc": "2.0", "id": ident})
        elif isinstance(result, dict) and set(result) == {"error"}:
            send({"jsonrpc": "2.0", "id": ident, "error": result["error"]})
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": result})

    requests(answered, notified)
