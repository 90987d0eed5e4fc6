"""A host's own log files while a mounted composition serves (``logging_host.py``, a FastAPI app in
a process of its own, once per side-effect level): the host's handlers, made in its lifespan after
the providers started and in a route after reads were served, keep every record and rotate fully
when a provider's record reaches them inside its scope; a handler the provider makes writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hosts_support import run_host

REFUSED = -32008  # SideEffectRefused
LOGGING_ERROR = "--- Logging error ---"


@pytest.fixture(scope="module", params=["scoped", "enforce"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp(f"host-logs-{request.param}")
    seen = run_host("logging_host.py", request.param, folder)
    seen["dir"], seen["level"] = folder, request.param
    return seen


def records(run: dict[str, Any]) -> list[str]:
    """Every record the provider's "log" reads made, in order (read numbers count every read)."""
    numbers = [n for n, (what, _) in enumerate(run["answers"], start=1) if what == "log"]
    return [f"read {r} record {n}, padded to rotate soon" for r in numbers for n in range(5)]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_the_hosts_handlers_keep_every_record_and_rotate_fully(run: dict[str, Any]) -> None:
    folder: Path = run["dir"]
    expected = records(run)
    assert len(expected) == 30
    # delay=True, on the provider's library logger: opened inside the first read, nothing lost
    assert [line for line in lines(folder / "late.log") if " record " in line] == expected
    # maxBytes 200, two backups: renamed and removed inside reads; the newest records kept in order
    assert {"rot.log", "rot.log.1", "rot.log.2"} <= set(run["files"]) and "rot.log.3" not in run["files"]
    rotated = lines(folder / "rot.log.2") + lines(folder / "rot.log.1") + lines(folder / "rot.log")
    kept = [line for line in rotated if " record " in line]
    assert kept == expected[-len(kept) :] and len(kept) >= 6
    # made before the composition, on the library's logger: the same
    assert {"early.log", "early.log.1"} <= set(run["files"]) and "early.log.2" not in run["files"]
    early = [line for line in lines(folder / "early.log.1") + lines(folder / "early.log") if " record " in line]
    assert early == expected[-len(early) :] and len(early) >= 6
    # rolled over inside two reads (the second in the same second: the old file removed first)
    timed = [name for name in run["files"] if name.startswith("timed.log.")]
    assert 1 <= len(timed) <= 2
    assert lines(folder / "timed.log")[-5:] == expected[-5:]
    # made in a route after reads were served; reopened inside a read after the host moved it
    assert lines(folder / "watched.log") == expected[-5:]
    assert [line for line in lines(folder / "watched.log.old") if " record " in line] == expected[-10:-5]
    # the only logging errors are the provider's own handlers being refused
    errors = run["stderr"].split(LOGGING_ERROR)[1:]
    assert all("victim-" in error and "side-effect-in-resource-read" in error for error in errors)
    assert errors or run["level"] == "enforce"  # process-wide, the planted handler is refused when made


def test_a_handler_the_provider_makes_in_a_read_writes_nothing(run: dict[str, Any]) -> None:
    answers = dict((what, answer) for what, answer in run["answers"] if what != "log")
    assert answers["own-handler"] == REFUSED  # its file opened when made, in the read
    assert answers["own-delayed-handler"] == REFUSED  # opened on its first record, in the read
    assert answers["use-planted"] == "use-planted"  # served: the rotating handler swallowed the refusal
    assert [name for name in run["files"] if name.startswith("victim-")] == []
    refused = [error for error in run["stderr"].split(LOGGING_ERROR)[1:] if "victim-" in error]
    if run["level"] == "enforce":  # process-wide, a handler made in a read is judged when made (tester 28 F4)
        assert answers["plant-handler"] == REFUSED
        assert not any("victim-planted.log" in error for error in refused)
    else:  # embedded, nothing is patched: its open is judged, made in one read and used in two later
        assert sum("victim-planted.log" in error for error in refused) == 2
