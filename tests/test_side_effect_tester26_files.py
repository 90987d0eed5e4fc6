"""Ways round the side-effect scope's file rules found by tester twenty-six, at both levels (run in
a process of its own, ``t26files_host.py``, so the scoped level is really unpatched):

- F4 a bytecode cache is written only as the import system writes one: through an ``O_EXCL`` temp
  replaced onto the cache, with the bytes the import system would write for its source;
- F9 ``sys.pycache_prefix`` set in a read exempts nothing (the value at install is used);
- F10 a host log handler retargeted in a read (``baseFilename``, ``mode``) writes nothing new.
"""

from __future__ import annotations

from typing import Any

import pytest
from hosts_support import run_host


@pytest.fixture(scope="module", params=["scoped", "enforce"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_host("t26files_host.py", request.param, tmp_path_factory.mktemp(f"t26files-{request.param}"))


CACHE_REFUSED = (
    "open a cache for writing",
    "os.open a cache for writing",
    "replace a planted temp into a cache",
    "replace an honest temp held open",
    "replace an honest temp mapped",
    "remove a cache",
    "rename a cache away",
    "truncate a cache",
    "chmod a cache",
    "replace a cache by another cache",
    "replace another source's honest temp",
)


def test_a_cache_is_written_only_with_what_the_import_system_would_write(run: dict[str, Any]) -> None:
    assert {label: run[label] for label in CACHE_REFUSED} == dict.fromkeys(CACHE_REFUSED, "refused")
    assert run["cache after plants"] is True  # nothing planted reached the cache path
    assert run["replace an honest temp into a cache"] == "allowed" and run["cache is the honest one"]
    assert run["replace an honest hash-based temp"] == "allowed"
    assert run["cache kept"] is True
    assert run["victim.X"] == 1  # the next import runs the source's code


def test_a_first_import_in_a_read_still_writes_its_cache(run: dict[str, Any]) -> None:
    assert run["first import"] == "allowed"
    assert run["first import cached"] is True and run["first import value"] == 42


def test_a_pycache_prefix_set_in_a_read_exempts_nothing(run: dict[str, Any]) -> None:
    assert run["makedirs under a prefix set in the read"] == "refused" and run["prefix made"] is False
    assert run["a cache temp under a prefix set in the read"] == "refused" and run["prefixed temp made"] is False


def test_a_host_log_handler_retargeted_in_a_read_writes_nothing_new(run: dict[str, Any]) -> None:
    assert run["log to the host log"] == "allowed"
    assert run["retarget the host handler"] == "refused"
    assert run["victim.cfg"] == "important = true\n"
    assert run["reopen the host log in mode w"] == "refused"
    assert run["app.log"] == "a record\n"
