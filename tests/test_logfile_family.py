"""The host's log files inside a guarded read (``core/_sideeffects/logfiles.py``): only what the
stdlib's handlers themselves do (their own (re)open, their rollover's renames, removals and a
documented rotator's compressed copy) is allowed, at both side-effect levels; the rest of a read's
writes to those files, or to files merely named like them, is refused. Run in a process of its own
(``logfamily_host.py``) so the scoped level is really unpatched."""

from __future__ import annotations

import logging
import logging.handlers
import queue
import re
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
    "rename the log to a name the namer never makes",
    "rename the log beyond the namer's backups",
    "remove a default name the namer never makes",
    "remove a sibling of the namer's rotations",
    "remove a timed default name the namer never makes",
    "remove a timed sibling",
    "open the log's former target mid-rollover",
)


def test_a_read_may_not_touch_a_host_logs_files_itself(run: dict[str, Any]) -> None:
    assert {label: run[label] for label in REFUSED} == dict.fromkeys(REFUSED, "refused")
    assert {"app", "app.sqlite", "app.toml", "app.1"} <= set(run["files"]) and "app.toml.x" not in run["files"]
    assert {"mid.log", "mid.log.1", "mid.log.sqlite"} <= set(run["files"])
    assert {"r3.log.1", "r3.3.log", "r3.1.sqlite", "t2.log.2026-12-06_20-00-03"} <= set(run["files"])
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


def test_rotations_a_namer_names_and_a_symlinked_log_rotate_inside_a_read(run: dict[str, Any]) -> None:
    """A namer moving the number (``r3.1.log``) or the date (``t2.<date>.log``), and a log file
    that is a symlink (its first rollover moves the link; the handler then opens a new file)."""
    for label in ("rotating with a namer", "timed with a namer", "symlinked log"):
        assert (run[label], run[label + " errors"]) == ("allowed", 0), (label, run["stderr"][-2000:])
    files = set(run["files"])
    assert {"r3.log", "r3.1.log", "r3.2.log"} <= files
    timed = sorted(n for n in files if n.startswith("t2.") and n.endswith(".log") and n != "t2.log")
    assert timed == ["t2.2026-12-06_20-00-02.log"]  # backupCount 1: the rollovers removed the older ones
    assert {"r4.log", "r4.log.1", "r4.log.2", "r4.log.3"} <= files
    assert run["symlinked records"] == 4  # one per file: each record of ~60 bytes rolls the 60-byte log over


def test_a_handler_planted_by_a_task_is_told_apart_only_when_enforced(run: dict[str, Any]) -> None:
    """The limitation docs/embedding.md states: scoped mode cannot tell who made a handler that a
    task attached after its call ended; the handler (never the read's own open) then writes.
    Enforced, the handler is refused when made (its ``mode="w"`` open judged then, tester 28 F4)."""
    if run["mode"] == "enforce":
        assert run["plant a handler"] == "refused" and run["victim after a record"] == "victim.cfg"
    else:
        assert (run["log through a planted handler"], run["victim after a record"]) == ("allowed", "a record\n")


def rotating(tmp_path: Path, name: str, **kwargs: Any) -> logging.handlers.RotatingFileHandler:
    return logging.handlers.RotatingFileHandler(tmp_path / name, delay=True, **kwargs)


@pytest.mark.parametrize(
    ("name", "namer", "expected"),
    [
        ("app.log.1", None, True),
        ("app.log.2", None, True),
        ("app.log.3", None, False),  # beyond backupCount
        ("app.log.0", None, False),
        ("app.log.01", None, False),
        ("app.log.\u0661", None, False),  # a non-ASCII digit
        ("app.log.1.gz", None, False),  # a compression extension only with a namer adding it
        ("app.log.1.gz", "gz", True),
        ("app.log.1", "gz", False),  # the namer's rollover never names it
        ("app.log.1.zst", "gz", False),
        ("app.log.1.sqlite", "gz", False),
        ("app.log.sqlite", None, False),
        ("app.log.1/x", None, False),
        ("app.1.log", "dotted", True),  # r3.1.log: the namer moved the number
        ("app.2.log", "dotted", True),
        ("app.3.log", "dotted", False),
        ("app.log.1", "dotted", False),
        ("app.1.sqlite", "dotted", False),
    ],
)
def test_a_rotating_handlers_family_is_what_its_rollover_names(
    tmp_path: Path, name: str, namer: str | None, expected: bool
) -> None:
    handler = rotating(tmp_path, "app.log", maxBytes=10, backupCount=2)
    handler.namer = NAMERS[namer]
    logfiles.settle()  # a namer set after the handler was made counts from the next call's entry
    assert logfiles._rotation(handler, str(tmp_path / name)) is expected


NAMERS: dict[str | None, Any] = {
    None: None,
    "gz": lambda name: name + ".gz",
    "dotted": lambda name: re.sub(r"\.log\.([^./]+)$", r".\1.log", name),  # app.log.X -> app.X.log
}


@pytest.mark.parametrize(
    ("name", "namer", "expected"),
    [
        ("t.log.2026-12-01", None, True),
        ("t.log.2026-12-01.sqlite", None, False),  # Python 3.11's extMatch allows an extension
        ("t.log.2026-13-01", None, False),  # extMatch's digits, no date strftime makes
        ("t.log.2026-12-01.gz", "gz", True),
        ("t.log.2026-12-01", "gz", False),  # the namer's rollover never names it
        ("t.log.2026-12", "gz", False),
        ("t.log.sqlite", "gz", False),
        ("t.log.1", "gz", False),
        ("t.2026-12-01.log", "dotted", True),  # the stdlib's bpo-45628 form
        ("t.log.2026-12-01", "dotted", False),
        ("t.2026-12-01.sqlite", "dotted", False),
        ("t.2026-12.log", "dotted", False),
        ("u.2026-12-01.log", "dotted", False),
    ],
)
def test_a_timed_handlers_family_is_what_its_namer_makes_of_its_ext_match(
    tmp_path: Path, name: str, namer: str | None, expected: bool
) -> None:
    handler = logging.handlers.TimedRotatingFileHandler(tmp_path / "t.log", when="D", delay=True)
    handler.namer = NAMERS[namer]
    logfiles.settle()  # a namer set after the handler was made counts from the next call's entry
    assert logfiles._rotation(handler, str(tmp_path / name)) is expected


def test_a_timed_handlers_own_ext_match_narrows_its_family(tmp_path: Path) -> None:
    handler = logging.handlers.TimedRotatingFileHandler(tmp_path / "t.log", when="D", delay=True)
    handler.extMatch = re.compile(r"2025-\d{2}-\d{2}")  # a host's own, narrower than its suffix format
    assert logfiles._rotation(handler, str(tmp_path / "t.log.2025-12-01"))
    assert not logfiles._rotation(handler, str(tmp_path / "t.log.2026-12-01"))


def test_a_rollover_renames_nothing_onto_the_log_whatever_its_namer_makes(tmp_path: Path) -> None:
    handler = rotating(tmp_path, "app.log", maxBytes=10, backupCount=2)
    handler.namer = lambda name: name.removesuffix(".1")  # app.log.1 named onto the log itself
    logfiles.settle()  # a namer set after the handler was made counts from the next call's entry
    base, second = str(tmp_path / "app.log"), str(tmp_path / "app.log.2")
    assert logfiles._writes_its_own(handler, "os.rename", (), [base, second])
    assert not logfiles._writes_its_own(handler, "os.rename", (), [second, base])


def test_a_namer_that_raises_names_nothing(tmp_path: Path) -> None:
    handler = rotating(tmp_path, "app.log", maxBytes=10, backupCount=2)
    handler.namer = lambda name: 1 / 0
    logfiles.settle()  # a namer set after the handler was made counts from the next call's entry
    assert not logfiles._rotation(handler, str(tmp_path / "app.log.1"))


def test_a_plain_handler_has_no_family(tmp_path: Path) -> None:
    handler = logging.FileHandler(tmp_path / "app", delay=True)
    assert not any(logfiles._rotation(handler, str(tmp_path / f"app.{s}")) for s in ("1", "sqlite", "2026-12-01"))


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
