"""What a large OpenAPI document costs the plugin at composition (``check``, ``serve``, each reload):
reading, parsing and validating it, reading its operations, and declaring their resources and tools.

Run alone: ``uv run python -m benchmarks.openapi_load [--quick]``.

Documents of two sizes are generated (``--quick``: 1,000 and 4,000 paths; else 5,000 and 20,000),
each path a ``GET`` with a path and a query parameter and a ``PUT`` with a recursive body schema,
or a plain ``GET``. The rows give CPU seconds per document and the cost per 1,000 paths of the larger
against the smaller: about 1.0x is linear (a 20,000-path document once took 67 s, the validator's
bookkeeping growing with the square of the operations; see ``plugins/openapi/validation.py``).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import Emit, median, standalone


def document(paths: int) -> dict[str, Any]:
    """An OpenAPI 3.0 document with ``paths`` paths (half templated GET + PUT, half plain GET)."""
    out: dict[str, Any] = {}
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}}}}}
    for i in range(paths):
        if i % 2:
            out[f"/things{i}"] = {"get": {"operationId": f"list{i}", "responses": ok}}
            continue
        body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/T"}}}}
        out[f"/things{i}/{{id}}"] = {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": f"get{i}", "tags": [f"t{i % 50}"], "responses": ok,
                    "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}]},
            "put": {"operationId": f"put{i}", "tags": [f"t{i % 50}"], "requestBody": body, "responses": ok},
        }  # fmt: skip
    thing = {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#/components/schemas/T"}}}
    return {"openapi": "3.0.3", "info": {"title": "Big", "version": "1"}, "servers": [{"url": "http://127.0.0.1:9"}],
            "paths": out, "components": {"schemas": {"T": thing}}}  # fmt: skip


def _once(path: Path) -> tuple[float, float]:
    """CPU seconds to load ``path``, and to make both providers of its service (CPU time: on a
    shared machine the wall clock measures the neighbours too)."""
    from mcp_providers.plugins.openapi.client import Service
    from mcp_providers.plugins.openapi.document import load
    from mcp_providers.plugins.openapi.providers import OpenAPIResources, OpenAPITools, selected
    from mcp_providers.plugins.openapi.settings import ServiceSettings

    t0 = time.process_time()
    loaded = load(str(path))
    t1 = time.process_time()
    service = Service(ServiceSettings(name="big", document=str(path)), loaded, None)
    operations = selected(service)[0]
    OpenAPIResources(service, operations), OpenAPITools(service, operations)
    return t1 - t0, time.process_time() - t1


def run(rounds: int, emit: Emit) -> None:
    """Emit, per size, the median seconds to load and to declare, and the per-path ratio."""
    sizes = (1000, 4000) if rounds < 9 else (5000, 20000)
    section, per_path = "openapi_load", {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.json"  # imports, meta-schemas compiled: paid once per process, not per path
        warm.write_text(json.dumps(document(10)))
        _once(warm)
        for size in sizes:
            path = Path(tmp) / f"paths{size}.json"
            path.write_text(json.dumps(document(size)))
            times = [_once(path) for _ in range(max(1, rounds // 9 + 1))]
            loading, declaring = median([t[0] for t in times]), median([t[1] for t in times])
            emit(section, f"{size} paths: read, parse, validate", loading, "CPU s")
            emit(section, f"{size} paths: declare resources and tools", declaring, "CPU s")
            per_path[size] = (loading + declaring) / size
    small, large = sizes
    ratio = per_path[large] / per_path[small]
    emit(section, f"cost per path, {large} against {small}", ratio, "x", f"{ratio:.2f}x",
         f"~1.0x (linear): {'ok' if ratio < 1.5 else 'grows faster than the document'}")  # fmt: skip


if __name__ == "__main__":
    standalone("python -m benchmarks.openapi_load", __doc__, run)
