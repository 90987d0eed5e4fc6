"""The host's log files inside a guarded read (``core/_sideeffects/logfiles.py``): only what the
stdlib's handlers themselves do (their own (re)open, their rollover's renames, removals and a
documented rotator's compressed copy) is allowed, at both side-effect levels; the rest of a read's
writes to those files, or to files merely named like them, is refused. Run in a process of its own
(``logfamily_host.py``) so the scoped level is really unpatched."""

from __future__ import annotations

import logging
import logging.handlers
import queue
from pathlib import Path
from typing import Any

import pytest
from hosts_support import run_host

from mcp_providers._sideeffects import logfiles


@pytest.fixture(scope="module", params=["scoped", "enforce"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    seen = run_host("logfamily_host.py", request.param, tmp_path_factory.mktemp(f"logfamily-{request.param}"))
    seen["mode"] = request.param
    return seen


REFUSED = (
    "remove a sibling",
    "rename a sibling away",
    "remove a plain handler's 'rotation'",
    "remove the host log",
    "rename the host log away",
    "reopen the host log in its mode",
    "remove a rotation directly",
    "rename a rotation directly",
    "rename a rotation onto the host log",
    "open a rotating log under its lock, stream open",
    "open the log mid-rollover in another mode",
    "remove the log mid-rollover without a rotator",
    "rename a rotation onto the log mid-rollover",
    "remove a sibling mid-rollover",
    "write a rotation mid-rollover without a rotator",
    "truncate a delayed host handler's file",
    "write a planted handler's file",
)


def test_a_read_may_not_touch_a_host_logs_files_itself(run: dict[str, Any]) -> None:
    assert {label: run[label] for label in REFUSED} == dict.fromkeys(REFUSED, "refused")
    assert {"app", "app.sqlite", "app.toml", "app.1"} <= set(run["files"]) and "app.toml.x" not in run["files"]
    assert {"mid.log", "mid.log.1", "mid.log.sqlite"} <= set(run["files"])
    assert run["data"] == "data.db" and run["victim"] == "victim.cfg"


def test_the_hosts_rotating_handlers_rotate_inside_a_read(run: dict[str, Any]) -> None:
    assert run["rotate mid-rollover"] == "allowed" and "mid.log.rotated" in run["files"]
    for label in ("rotating host log", "gzip rotation", "behind a MemoryHandler"):
        assert (run[label], run[label + " errors"]) == ("allowed", 0), (label, run["stderr"][-2000:])
    files = set(run["files"])
    assert {"rot.log", "rot.log.1", "rot.log.2"} <= files and "rot.log.3" not in files
    assert {"gz.log", "gz.log.1.gz", "gz.log.2.gz"} <= files and "gz.log.1" not in files
    assert {"behind.log", "behind.log.1"} <= files
    assert run["behind records"] == 8  # nothing lost: 8 records of ~60 bytes, 3 backups of 200


def test_a_handler_planted_by_a_task_is_told_apart_only_when_enforced(run: dict[str, Any]) -> None:
    """The limitation docs/embedding.md states: scoped mode cannot tell who made a handler that a
    task attached after its call ended; the handler (never the read's own open) then writes."""
    if run["mode"] == "enforce":
        assert (run["log through a planted handler"], run["victim after a record"]) == ("refused", "victim.cfg")
    else:
        assert (run["log through a planted handler"], run["victim after a record"]) == ("allowed", "a record\n")


def rotating(tmp_path: Path, name: str, **kwargs: Any) -> logging.handlers.RotatingFileHandler:
    return logging.handlers.RotatingFileHandler(tmp_path / name, delay=True, **kwargs)


@pytest.mark.parametrize(
    ("suffix", "namer", "expected"),
    [
        ("1", False, True),
        ("2", False, True),
        ("3", False, False),  # beyond backupCount
        ("0", False, False),
        ("01", False, False),
        ("\u0661", False, False),  # a non-ASCII digit
        ("1.gz", False, False),  # a compression extension only with a namer
        ("1.gz", True, True),
        ("1.zst", True, True),
        ("1.sqlite", True, False),
        ("sqlite", False, False),
        ("1/x", False, False),
    ],
)
def test_a_rotating_handlers_family_is_what_its_rollover_names(
    tmp_path: Path, suffix: str, namer: bool, expected: bool
) -> None:
    handler = rotating(tmp_path, "app.log", maxBytes=10, backupCount=2)
    if namer:
        handler.namer = lambda name: name + ".gz"
    stem = str(tmp_path / "app.log")
    assert logfiles._rotation(handler, stem, f"{stem}.{suffix}") is expected


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [("2026-12-01", True), ("2026-12-01.gz", True), ("2026-12", False), ("sqlite", False), ("1", False)],
)
def test_a_timed_handlers_family_matches_its_own_ext_match(tmp_path: Path, suffix: str, expected: bool) -> None:
    handler = logging.handlers.TimedRotatingFileHandler(tmp_path / "t.log", when="D", delay=True)
    handler.namer = lambda name: name + ".gz"
    stem = str(tmp_path / "t.log")
    assert logfiles._rotation(handler, stem, f"{stem}.{suffix}") is expected


def test_a_plain_handler_has_no_family(tmp_path: Path) -> None:
    handler = logging.FileHandler(tmp_path / "app", delay=True)
    stem = str(tmp_path / "app")
    assert not any(logfiles._rotation(handler, stem, f"{stem}.{s}") for s in ("1", "sqlite", "2026-12-01"))


def test_the_walk_follows_targets_and_listeners(tmp_path: Path) -> None:
    behind = rotating(tmp_path, "behind.log", maxBytes=10)
    listened = rotating(tmp_path, "listened.log", maxBytes=10)
    memory = logging.handlers.MemoryHandler(capacity=10, target=behind)
    queued = logging.handlers.QueueHandler(queue.Queue())
    queued.listener = logging.handlers.QueueListener(queue.Queue(), listened)  # type: ignore[attr-defined]
    logger = logging.getLogger("tests.logfile_family.walk")
    logger.addHandler(memory)
    logger.addHandler(queued)
    try:
        found = list(logfiles._attached_file_handlers())
    finally:
        logger.removeHandler(memory)
        logger.removeHandler(queued)
    assert behind in found and listened in found
