"""Run as its own process by ``test_logfile_family.py`` (``python logfamily_host.py scoped|enforce DIR``):
the host's log handlers and what a read may do to their files, at one side-effect level. Prints one
JSON object: for each case, ``"allowed"`` or ``"refused"`` (a ``SideEffectRefused``), and for the
host's own logging, the files left and the logging errors printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import json
import logging
import logging.handlers
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from mcp_providers._sideeffects import levels
from mcp_providers._sideeffects.levels import enter_scope, exit_scope
from mcp_providers.errors import SideEffectRefused

MODE, DIR = sys.argv[1], sys.argv[2]
seen: dict[str, Any] = {}


def path(name: str) -> str:
    return os.path.join(DIR, name)


def read(name: str) -> str:
    with open(path(name)) as f:
        return f.read()


def make(*names: str) -> None:
    for name in names:
        with open(path(name), "w") as f:
            f.write(name)


def in_read(label: str, fn: Callable[[], Any]) -> None:
    """``fn`` inside a guarded read: ``seen[label]`` says whether its write was allowed."""
    scope, token = enter_scope("p", "pl", f"res://{label}", "read", "enforce")
    try:
        fn()
        seen[label] = "allowed"
    except SideEffectRefused:
        seen[label] = "refused"
    except OSError as err:  # allowed, and the file system said no (the old rule let it through)
        seen[label] = f"allowed ({type(err).__name__})"
    finally:
        exit_scope(scope, token)


def host_logs(label: str, logger: logging.Logger, count: int) -> None:
    """The host's handlers write ``count`` records inside a read; the logging errors are kept."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        in_read(label, lambda: [logger.info("record %d %s", n, "z" * 40) for n in range(count)])
    seen[label + " errors"] = err.getvalue().count("--- Logging error ---")


def host_logger(name: str, *handlers: logging.Handler) -> logging.Logger:
    logger = logging.getLogger(name)
    for handler in handlers:
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def gzip_rotator(source: str, dest: str) -> None:  # the logging cookbook's, with gzip
    with open(source, "rb") as f, gzip.open(dest, "wb") as g:
        g.write(f.read())
    os.remove(source)


if MODE == "enforce":
    levels.install()
else:
    levels.install_scoped()

# A plain FileHandler named without an extension: its siblings are no rotations of it
make("app", "app.sqlite", "app.toml", "app.1")
host_logger("host.plain", logging.FileHandler(path("app")))
in_read("remove a sibling", lambda: os.remove(path("app.sqlite")))
in_read("rename a sibling away", lambda: os.rename(path("app.toml"), path("app.toml.x")))
in_read("remove a plain handler's 'rotation'", lambda: os.remove(path("app.1")))
in_read("remove the host log", lambda: os.remove(path("app")))
in_read("rename the host log away", lambda: os.rename(path("app"), path("app.1")))
in_read("reopen the host log in its mode", lambda: open(path("app"), "a").close())

# A rotating handler: its rollover is allowed, the same calls made by the read's own code are not
rot = logging.handlers.RotatingFileHandler(path("rot.log"), maxBytes=100, backupCount=2)
rot_logger = host_logger("host.rot", rot)
make("rot.log.1", "rot.log.2", "rot.log.3")
in_read("remove a rotation directly", lambda: os.remove(path("rot.log.2")))
in_read("rename a rotation directly", lambda: os.rename(path("rot.log.1"), path("rot.log.2")))
in_read("rename a rotation onto the host log", lambda: os.rename(path("rot.log.1"), path("rot.log")))
with rot.lock:  # the handler's lock held, its stream open: not its own reopen
    in_read("open a rotating log under its lock, stream open", lambda: open(path("rot.log"), "a").close())
os.remove(path("rot.log.3"))
host_logs("rotating host log", rot_logger, 8)


@contextlib.contextmanager
def mid_rollover(handler: logging.handlers.RotatingFileHandler) -> Iterator[None]:
    """As ``doRollover`` leaves a handler (its lock held by this thread, its stream closed), so
    only the write itself decides; the stream is reopened after, outside the read."""
    with handler.lock:
        if handler.stream is not None:  # None when a refused rollover left it closed
            handler.stream.close()
        handler.stream = None  # type: ignore[assignment]
        try:
            yield
        finally:
            handler.stream = handler._open()


mid = logging.handlers.RotatingFileHandler(path("mid.log"), maxBytes=10_000, backupCount=2)  # no rotator
host_logger("host.mid", mid)
make("mid.log.1", "mid.log.sqlite")
with mid_rollover(mid):
    in_read("open the log mid-rollover in another mode", lambda: open(path("mid.log"), "w").close())
    in_read("remove the log mid-rollover without a rotator", lambda: os.remove(path("mid.log")))
    in_read("rename a rotation onto the log mid-rollover", lambda: os.rename(path("mid.log.1"), path("mid.log")))
    in_read("remove a sibling mid-rollover", lambda: os.remove(path("mid.log.sqlite")))
    in_read("write a rotation mid-rollover without a rotator", lambda: open(path("mid.log.1"), "w").close())
    in_read("rotate mid-rollover", lambda: os.rename(path("mid.log"), path("mid.log.2")))
os.rename(path("mid.log.2"), path("mid.log.rotated"))  # what the allowed rename did, moved aside

# The documented gzip namer and rotator: rot.log.1.gz opened for writing, rot.log removed
gz = logging.handlers.RotatingFileHandler(path("gz.log"), maxBytes=50, backupCount=2)
gz.namer, gz.rotator = (lambda name: name + ".gz"), gzip_rotator
gz_logger = host_logger("host.gz", gz)
gz_logger.info("before the reads %s", "x" * 60)
host_logs("gzip rotation", gz_logger, 3)

# A rotating handler behind a MemoryHandler (the walk follows `target`)
behind = logging.handlers.RotatingFileHandler(path("behind.log"), maxBytes=200, backupCount=3, delay=True)
mem_logger = host_logger("host.memory", logging.handlers.MemoryHandler(capacity=1, target=behind))
mem_logger.info("startup")
host_logs("behind a MemoryHandler", mem_logger, 8)
seen["behind records"] = sum(read(name).count("record") for name in os.listdir(DIR) if name.startswith("behind.log"))


# Namers that move the rotation's number or date (the forms the stdlib's own rollover handles)
def dotted(stem: str) -> Callable[[str], str]:
    return lambda name: name.replace(f"{stem}.log.", f"{stem}.") + ".log"  # r3.log.1 -> r3.1.log


r3 = logging.handlers.RotatingFileHandler(path("r3.log"), maxBytes=60, backupCount=2)
r3.namer = dotted("r3")
host_logs("rotating with a namer", host_logger("host.r3", r3), 5)
with mid_rollover(r3):
    make("r3.log.1", "r3.3.log", "r3.1.sqlite")
    in_read("rename the log to a name the namer never makes", lambda: os.rename(path("r3.log"), path("r3.log.1")))
    in_read("rename the log beyond the namer's backups", lambda: os.rename(path("r3.log"), path("r3.3.log")))
    in_read("remove a default name the namer never makes", lambda: os.remove(path("r3.log.1")))
    in_read("remove a sibling of the namer's rotations", lambda: os.remove(path("r3.1.sqlite")))

t2 = logging.handlers.TimedRotatingFileHandler(path("t2.log"), when="S", backupCount=1)
t2.namer = dotted("t2")
t2_logger = host_logger("host.t2", t2)
make("t2.2026-12-06_20-00-01.log", "t2.2026-12-06_20-00-02.log")


def timed_rollovers() -> None:
    for n in range(3):
        t2.rolloverAt = 10 + n  # due now; named for the second before it (1970-01-01...)
        t2_logger.info("timed record %d", n)


err = io.StringIO()
with contextlib.redirect_stderr(err):
    in_read("timed with a namer", timed_rollovers)
seen["timed with a namer errors"] = err.getvalue().count("--- Logging error ---")
with mid_rollover(t2):  # type: ignore[arg-type]
    make("t2.log.2026-12-06_20-00-03", "t2.2026-12-06_20-00-04.sqlite")
    in_read("remove a timed default name the namer never makes", lambda: os.remove(path("t2.log.2026-12-06_20-00-03")))
    in_read("remove a timed sibling", lambda: os.remove(path("t2.2026-12-06_20-00-04.sqlite")))

# A log file that is a symlink: the first rollover moves the link, the handler then opens a new file
os.mkdir(path("real"))
make("real/current.log")
os.symlink(path("real/current.log"), path("r4.log"))
r4 = logging.handlers.RotatingFileHandler(path("r4.log"), maxBytes=60, backupCount=3)
r4_logger = host_logger("host.r4", r4)
host_logs("symlinked log", r4_logger, 6)
seen["symlinked records"] = sum(read(n).count("record") for n in os.listdir(DIR) if n.startswith("r4.log"))
with mid_rollover(r4):  # its file is now r4.log, a regular file; current.log is a rotation's target
    in_read("open the log's former target mid-rollover", lambda: open(path("real/current.log"), "a").close())

# A host handler's file (mode "w", delay=True, never written yet) opened by the read's own code
make("data.db")
host_logger("provider.x", logging.FileHandler(path("data.db"), mode="w", delay=True))
in_read("truncate a delayed host handler's file", lambda: open(path("data.db"), "w").close())


async def attach_later() -> None:
    """A handler made in a read, attached by a task once the read ended (the tester's a3)."""
    make("victim.cfg")
    later: list[asyncio.Task[None]] = []

    def plant() -> None:
        handler = logging.FileHandler(path("victim.cfg"), mode="w", delay=True)

        async def attach() -> None:
            await asyncio.sleep(0.05)
            logging.getLogger("uvicorn.error").addHandler(handler)

        later.append(asyncio.get_running_loop().create_task(attach()))

    in_read("plant a handler", plant)
    if later:  # enforced, the handler is judged when made, as if it opened its file then (tester 28 F4)
        await later[0]
    in_read("write a planted handler's file", lambda: open(path("victim.cfg"), "w").close())
    seen["victim"] = read("victim.cfg")
    # What scoped mode cannot tell (docs/embedding.md): the handler itself writes a record there
    with contextlib.redirect_stderr(io.StringIO()):
        in_read("log through a planted handler", lambda: logging.getLogger("uvicorn.error").warning("a record"))
    seen["victim after a record"] = read("victim.cfg")


asyncio.run(attach_later())
seen["data"] = read("data.db")
seen["files"] = sorted(os.listdir(DIR))
print(json.dumps(seen))
