"""The two-skill plugin of ``tests/skills_fixture`` served over stdio, as ``mcp-providers serve``
serves (for clients run as processes: ``tests/test_skills_inspector.py``).

Run as ``python tests/skills_server.py [--deny]``; ``--deny`` adds a policy refusing every action
on the ``daily-review`` skill's files.
"""

from __future__ import annotations

import sys

import anyio
from skills_fixture import notes

from mcp_providers import Decision, hookimpl
from mcp_providers._serve.transport.stdio_loop import serve_stdio
from mcp_providers.testing import compose


class DenyDaily:
    @hookimpl
    def authorize(self, action: str, target: str) -> Decision | None:
        return Decision(False, "not for you") if target.startswith("skill://notes/daily-review/") else None


if __name__ == "__main__":
    plugins: dict[str, object] = {"notes": notes}
    if "--deny" in sys.argv[1:]:
        plugins["policy"] = DenyDaily()
    server = compose(plugins).server
    anyio.run(lambda: serve_stdio(server))
