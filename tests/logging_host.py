"""A FastAPI host that logs to files of its own while a mounted composition serves, run as its own
process by ``test_embedded_host_logging`` (``python logging_host.py scoped|enforce DIR``): prints
one JSON object of what each read answered. The host's handlers are made in its OWN lifespan
(after ``mount()`` started the providers) and in a route (after reads were served); the provider's
records reach them inside its scope. The provider also makes handlers of its own, which must
write nothing.

Files, under DIR: ``rot.log`` (RotatingFileHandler, maxBytes 200, 2 backups, on the root
logger), ``timed.log`` (TimedRotatingFileHandler, rolled over at each read by the host), ``late.log``
(FileHandler, delay=True, on ``providerlib`` itself), ``watched.log`` (WatchedFileHandler, made in a
route; the host moves the file aside between reads, so the handler reopens it inside a read), and
``early.log`` (RotatingFileHandler, maxBytes 300, 1 backup, on ``providerlib``, made before the
composition), and ``victim-*.log``, which the provider's own handlers aim at.
"""

from __future__ import annotations

import contextlib
import json
import logging
import logging.handlers
import os
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import httpx2
import uvicorn
from fastapi import FastAPI
from mcp import Client, MCPError

import mcp_providers
from mcp_providers import Content, ReadRequest, ResourceProvider, ResourceTemplate, hookimpl
from mcp_providers.embedding import mount

MODE, DIR = sys.argv[1], sys.argv[2]
library = logging.getLogger("providerlib")  # what a provider's HTTP library would log on
handlers: dict[str, logging.Handler] = {}


def victim(name: str) -> str:
    return os.path.join(DIR, f"victim-{name}.log")


def provider_attempt(what: str, reads: list[int]) -> str:
    """One read's work, in the provider's scope."""
    reads[0] += 1
    if what == "log":
        for n in range(5):
            library.warning("read %d record %d, padded to rotate soon", reads[0], n)
    elif what == "own-handler":  # its file opened now: refused
        logging.FileHandler(victim("own"))
    elif what == "own-delayed-handler":  # made and used in the same read
        planted = logging.FileHandler(victim("delayed"), delay=True)
        library.addHandler(planted)
        try:
            library.warning("through the provider's own handler")  # FileHandler opens outside its try
        finally:
            library.removeHandler(planted)
    elif what == "plant-handler":  # made in this read, used by the next ones
        handlers["planted"] = logging.handlers.RotatingFileHandler(victim("planted"), maxBytes=50, delay=True)
        logging.getLogger("providerlib.planted").addHandler(handlers["planted"])
    elif what == "use-planted":
        logging.getLogger("providerlib.planted").warning("through a handler made in an earlier read")
    return what


class Logs(ResourceProvider):
    name = "logs"
    prefixes = ("logs://",)

    def __init__(self) -> None:
        self.reads = [0]

    def templates(self) -> Sequence[ResourceTemplate]:
        return [ResourceTemplate(uri_template="logs://p/{what}", name="logs")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=provider_attempt(request.params["what"], self.reads))


class Plugin:
    @hookimpl
    def register_resource_providers(self) -> list[ResourceProvider]:
        return [Logs()]


@contextlib.asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    """The host's own lifespan: runs after mount() started the providers."""
    handlers["rot"] = logging.handlers.RotatingFileHandler(os.path.join(DIR, "rot.log"), maxBytes=200, backupCount=2)
    handlers["timed"] = logging.handlers.TimedRotatingFileHandler(os.path.join(DIR, "timed.log"), backupCount=2)
    logging.getLogger().addHandler(handlers["rot"])
    logging.getLogger().addHandler(handlers["timed"])
    handlers["late"] = logging.FileHandler(os.path.join(DIR, "late.log"), delay=True)
    library.addHandler(handlers["late"])
    yield


app = FastAPI(lifespan=lifespan)


@app.post("/host/watch")
def watch() -> str:
    """A handler made by the host after reads were served, outside any of them."""
    handlers["watched"] = logging.handlers.WatchedFileHandler(os.path.join(DIR, "watched.log"))
    logging.getLogger().addHandler(handlers["watched"])
    return "ok"


@app.post("/host/move")
def move() -> str:
    """Outside any read: move the watched file aside (log rotation by another program) and make the
    timed handler due (its interval has passed)."""
    with contextlib.suppress(FileNotFoundError):  # not written since it was last moved: the test says so
        os.replace(os.path.join(DIR, "watched.log"), os.path.join(DIR, "watched.log.old"))
    handlers["timed"].rolloverAt = 0  # type: ignore[attr-defined]
    return "ok"


handlers["early"] = logging.handlers.RotatingFileHandler(os.path.join(DIR, "early.log"), maxBytes=300, backupCount=1)
library.addHandler(handlers["early"])  # made before the composition, delay=False
composition = mcp_providers.compose(plugins={"logs": Plugin()}, load_entrypoints=False)
if MODE == "enforce":
    mount(app, composition, "/mcp", side_effects="enforce")
else:
    mount(app, composition, "/mcp")

READS = ("log", "log", "own-handler", "own-delayed-handler", "plant-handler", "use-planted", "log")
READS += ("watch", "log", "move", "log", "use-planted", "move", "log")  # "watch"/"move": host routes


async def main() -> dict[str, Any]:
    logging.getLogger().setLevel(logging.WARNING)  # the client's own INFO records stay out of the files
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", log_config=None))
    answers: list[Any] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.01)
        try:
            async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client, httpx2.AsyncClient() as host:
                for what in READS:
                    if what in ("watch", "move"):
                        (await host.post(f"http://127.0.0.1:{port}/host/{what}")).raise_for_status()
                        continue
                    try:
                        result = await client.read_resource(f"logs://p/{what}")
                        answers.append([what, result.contents[0].text])  # type: ignore[union-attr]
                    except MCPError as exc:
                        answers.append([what, exc.error.code])
        finally:
            server.should_exit = True
    for handler in handlers.values():
        handler.close()
    return {"answers": answers, "files": sorted(os.listdir(DIR))}


print(json.dumps(anyio.run(main)))
