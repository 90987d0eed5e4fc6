"""Ways round the side-effect scope's file rules found by tester twenty-six, at both levels (run in
a process of its own, ``t26files_host.py``, so the scoped level is really unpatched):

- F4 a bytecode cache is written only as the import system writes one: through an ``O_EXCL`` temp
  replaced onto the cache, with the bytes the import system would write for its source;
- F9 ``sys.pycache_prefix`` set in a read exempts nothing (the value at install is used);
- F10 a host log handler retargeted in a read (``baseFilename``, ``mode``) writes nothing new.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import CodeType
from typing import Any

import pytest
from hosts_support import run_host

from mcp_providers._sideeffects import bytecode


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
    "create a temp of a cache of no source",
    "reopen a cache temp for writing",
    "replace a temp with a second link",
    "replace a temp of another magic",
    "replace a temp of another mtime",
    "replace a temp of another hash",
    "a planted temp with marshal.loads replaced",
    "a planted temp with compile replaced",
)


def test_a_cache_is_written_only_with_what_the_import_system_would_write(run: dict[str, Any]) -> None:
    assert {label: run[label] for label in CACHE_REFUSED} == dict.fromkeys(CACHE_REFUSED, "refused")
    assert run["cache after plants"] is True  # nothing planted reached the cache path
    assert run["replace an honest temp into a cache"] == "allowed" and run["cache is the honest one"]
    assert run["replace an honest hash-based temp"] == "allowed"
    assert run["cache kept"] is True and run["cache still kept"] is True
    assert run["remake a temp while judged"] == "refused" and run["cache after a remade temp"] is True
    assert run["cache after swapped functions"] is True
    assert run["victim.X"] == 1  # the next import runs the source's code


def test_a_cache_temp_made_by_another_writer_is_never_written_in_a_read(run: dict[str, Any]) -> None:
    """A temp of a cache is opened for writing in a read only to be created (``O_EXCL``): a read that
    opened another writer's temp could change its bytes before that writer replaced it onto the
    cache, where no judgement of this process sees it (round 18 item 6). A temp still there when
    the read ends is swept and refuses the read anyway; this is the case the sweep cannot see."""
    for label in ("", " with O_CREAT"):
        assert run["write into another writer's cache temp" + label] == "refused"
        assert run["cache after another writer's temp" + label] is True


def test_a_shared_mapping_of_a_temp_refuses_its_replace(run: dict[str, Any]) -> None:
    """The mapping is made by the host's code, not in the read (loading ``libc`` there is refused on
    its own, which hid this guard): the replace itself is refused."""
    assert run["mapped temp reached the replace"] is True
    assert run["replace an honest temp mapped"] == "refused"


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
    assert run["remove a rotation of a retargeted handler"] == "refused"


def test_a_host_handlers_rollover_settings_set_in_a_read_name_nothing_new(run: dict[str, Any]) -> None:
    assert run["roll over with the host's namer"] == "allowed"
    assert run["named rotations"] == ["n-1.log", "n-2.log", "n.log"]
    changed = (
        "a namer set in a read names a victim",
        "a rotator set in a read removes the log",
        "a backup count set in a read",
    )
    assert {label: run[label] for label in changed} == dict.fromkeys(changed, "refused")
    assert run["victim2.cfg"] == "important = true\n"


def test_code_objects_are_compared_with_the_fields_eq_leaves_out() -> None:
    code = compile("def f(x):\n    return x + 1\n", "m.py", "exec")
    deeper = tuple(
        c.replace(co_stacksize=c.co_stacksize + 100) if isinstance(c, CodeType) else c for c in code.co_consts
    )
    assert (
        code.replace(co_stacksize=code.co_stacksize + 100) == code and code.replace(co_consts=deeper) == code
    )  # == alone misses them
    assert bytecode.same_code(compile("def f(x):\n    return x + 1\n", "elsewhere.py", "exec"), code)
    assert not bytecode.same_code(code.replace(co_stacksize=code.co_stacksize + 100), code)
    assert not bytecode.same_code(code.replace(co_consts=deeper), code)
    assert not bytecode.same_code(b"not code", code)


PREFIXED = """
import importlib.util, sys
from mcp_providers._sideeffects import levels
from mcp_providers._sideeffects.levels import enter_scope, exit_scope
getattr(levels, sys.argv[1])()
sys.path.insert(0, sys.argv[2])
scope, token = enter_scope("p", "pl", "res://x", "read", "enforce")
try:
    import under_prefix
finally:
    exit_scope(scope, token)
print(importlib.util.cache_from_source(under_prefix.__file__))
"""


@pytest.mark.parametrize("install", ["install_scoped", "install"])
def test_a_first_import_in_a_read_writes_its_cache_under_the_prefix_the_process_started_with(
    install: str, tmp_path: Path
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "under_prefix.py").write_text("VALUE = 1\n")
    prefix = tmp_path / "prefix"
    command = [sys.executable, "-X", f"pycache_prefix={prefix}", "-c", PREFIXED, install, str(tmp_path / "src")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_PROVIDERS_", "PYTHON"))}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    cache = Path(done.stdout.strip())
    assert cache.is_file() and cache.is_relative_to(prefix)
