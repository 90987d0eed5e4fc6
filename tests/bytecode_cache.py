"""One bytecode cache for the whole test run, also when ``PYTHONDONTWRITEBYTECODE`` is set.

Most of the suite's CPU time is Python starting: every ``python -m mcp_providers`` and stdio server
a test spawns imports the MCP SDK, pydantic and the core (about 700 modules). With
``PYTHONDONTWRITEBYTECODE=1`` in the environment (some shells and agent sandboxes set it) no
``.pyc`` is ever written, so each of those processes compiles every module from source again
(about 0.9 s of CPU each, measured on ``python -m mcp_providers --help``: 2.75 s without
caches, 1.85 s with), and each pytest worker rewrites the asserts of all 135 test modules again
(collection: 17 s instead of 4 s).

So the test run drops ``PYTHONDONTWRITEBYTECODE`` and writes its caches under
``PYTHONPYCACHEPREFIX`` (``.cache/pycache`` of the checkout, git-ignored) instead: nothing is
written beside the sources, which is what the variable is usually set to avoid, and every process
the run starts (the xdist workers, the servers they spawn, the venvs they build) reads the modules
compiled once. A prefix the caller set already is kept. ``sys.pycache_prefix`` is where the
import system and pytest's assertion rewriter (``_pytest.assertion.rewrite.get_cache_dir``) put
their caches.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PREFIX = Path(__file__).resolve().parent.parent / ".cache" / "pycache"


def use_one_bytecode_cache() -> None:
    """Point this process and every process started after it at one bytecode cache folder.

    Call before anything is spawned (the xdist controller starts its workers at session start)."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(PREFIX)
    try:
        os.makedirs(prefix, exist_ok=True)  # made here, so no process makes it under a write guard
    except OSError:
        return  # a read-only checkout: leave the caller's setting alone
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # set to anything, even "0", it turns writing off
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
