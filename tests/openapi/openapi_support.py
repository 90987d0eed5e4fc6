"""A real FastAPI app serving its own generated OpenAPI document on loopback, for the OpenAPI plugin's tests.

The app records what it received (path, query, headers) so a test can see exactly what the provider
requested: the path the upstream decoded, and that no caller token travelled with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel

SEEN: list[dict[str, Any]] = []
"""One entry per request the app answered: method, raw path, decoded path, query and headers."""
ITEMS: dict[int, dict[str, Any]] = {
    1: {"id": 1, "name": "hammer", "price": 9.5},
    2: {"id": 2, "name": "saw", "price": 20.0},
}


class NewItem(BaseModel):
    name: str
    price: float


def app() -> FastAPI:
    """The app: items (list, one, search, create, replace, delete), files by folder and name, and
    endpoints that hang, answer too much or fail."""
    api = FastAPI(title="Tools Shop", version="2.1.0")
    api.add_middleware(GZipMiddleware, minimum_size=1000)  # /big goes compressed: 200 kB in a few hundred bytes

    @api.middleware("http")
    async def record(request: Request, call_next: Any) -> Any:
        SEEN.append({"method": request.method, "raw_path": request.scope.get("raw_path", b"").decode(),
                     "path": request.url.path, "query": dict(request.query_params),
                     "headers": dict(request.headers)})  # fmt: skip
        return await call_next(request)

    @api.get("/items", operation_id="listItems", tags=["items"])
    def list_items() -> list[dict[str, Any]]:
        return list(ITEMS.values())

    @api.get("/items/{item_id}", operation_id="getItem", tags=["items"])
    def get_item(item_id: int) -> dict[str, Any]:
        if item_id not in ITEMS:
            raise HTTPException(404, f"no item {item_id}")
        return ITEMS[item_id]

    @api.get("/search", operation_id="searchItems", tags=["items"])
    def search(q: str, limit: int = 10) -> list[dict[str, Any]]:
        return [i for i in ITEMS.values() if q in i["name"]][:limit]

    @api.post("/items", operation_id="createItem", tags=["items"], status_code=201)
    def create_item(item: NewItem) -> dict[str, Any]:
        if any(i["name"] == item.name for i in ITEMS.values()):
            raise HTTPException(409, f"an item named {item.name!r} exists")
        new = {"id": max(ITEMS, default=0) + 1, **item.model_dump()}
        ITEMS[new["id"]] = new
        return new

    @api.put("/items/{item_id}", operation_id="replaceItem", tags=["items"])
    def replace_item(item_id: int, item: NewItem) -> dict[str, Any]:
        ITEMS[item_id] = {"id": item_id, **item.model_dump()}
        return ITEMS[item_id]

    @api.delete("/items/{item_id}", operation_id="deleteItem", tags=["admin"], status_code=204)
    def delete_item(item_id: int) -> Response:
        ITEMS.pop(item_id, None)
        return Response(status_code=204)

    @api.get("/files/{folder}/{name}", operation_id="getFile", tags=["files"])
    def get_file(folder: str, name: str) -> dict[str, str]:
        return {"folder": folder, "name": name}

    @api.get("/slow", operation_id="slow", tags=["faults"])
    async def slow() -> dict[str, str]:
        await asyncio.sleep(30)
        return {"late": "yes"}

    @api.get("/big", operation_id="big", tags=["faults"], response_class=PlainTextResponse)
    def big() -> str:
        return "x" * 200_000

    @api.get("/broken", operation_id="broken", tags=["faults"])
    def broken() -> Response:
        return Response('{"detail": "database down"}', status_code=503, media_type="application/json")

    @api.get("/echo", operation_id="echoRefusal", tags=["faults"])
    def echo(request: Request, ok: bool = False) -> Response:
        """Quotes the credential it was sent: refusing it (403), or with ``ok`` in a success."""
        if ok:
            said = json.dumps({"detail": [f"you sent {request.headers.get('authorization')}"]})
            return Response(said, status_code=200, media_type="application/json")
        said = json.dumps({"detail": f"refused credential {request.headers.get('authorization')}"})
        return Response(said, status_code=403, media_type="application/json")

    return api


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(asgi: Any) -> Iterator[str]:
    """``asgi`` under uvicorn in a thread on a free loopback port; yields its origin."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=0.1)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
