"""Machine instructions per step of the in-memory read, counted by callgrind (issue 43).

``uv run python -m benchmarks.read_steps [--reads N]`` runs this module again under
``valgrind --tool=callgrind`` (as :mod:`benchmarks.read_instructions` does) and prints what each
step of one ``resources/read`` costs, inclusive of everything it calls, for the composed server and
for ``MCPServer`` (OTel off), with the SDK floor's result validation beside them.

How a Python step is told apart: callgrind sees C functions only (Python 3.11 has no perf
trampolines), so for measurement only each step is called through a C function of the interpreter
that the read path never calls otherwise (``operator.call``, ``functools.reduce``, an ``itertools``
iterator, ``abs`` of an object whose ``__abs__`` runs the step, ...). The inclusive cost of that C
function's calls is the step's cost, a few hundred instructions of the trampoline included. A
coroutine step (``invoke``, the provider's read) is stepped once through its trampoline; it must
finish without suspending, which an in-memory read does (else the run stops with an error). The
wrappers add Python frames of their own, so the patched windows cost more in total than the
unpatched one: the per-read totals come from the unpatched windows, each step from the patched one.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

from benchmarks import fixtures


class _Via:
    """Runs ``f(*args)`` from a dunder a builtin calls, keeping the value in :attr:`value`."""

    __slots__ = ("args", "f", "value")

    def __init__(self, f: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.f, self.args, self.value = f, args, None

    def __abs__(self) -> int:
        self.value = self.f(*self.args)
        return 0

    def __round__(self, n: Any = None) -> int:
        self.value = self.f(*self.args)
        return 0

    def __format__(self, spec: str) -> str:
        self.value = self.f(*self.args)
        return ""

    def __dir__(self) -> list[str]:
        self.value = self.f(*self.args)
        return []


def _kept(f: Callable[..., Any], args: tuple[Any, ...], box: list[Any]) -> bool:
    box.append(f(*args))
    return True


def _via_abs(f: Callable[..., Any], *args: Any) -> Any:
    v = _Via(f, args)
    abs(v)  # type: ignore[arg-type]
    return v.value


def _via_round(f: Callable[..., Any], *args: Any) -> Any:
    v = _Via(f, args)
    round(v)  # type: ignore[call-overload]
    return v.value


def _via_format(f: Callable[..., Any], *args: Any) -> Any:
    v = _Via(f, args)
    format(v)
    return v.value


def _via_dir(f: Callable[..., Any], *args: Any) -> Any:
    v = _Via(f, args)
    dir(v)
    return v.value


def _via_dropwhile(f: Callable[..., Any], *args: Any) -> Any:
    box: list[Any] = []
    next(itertools.dropwhile(lambda _: not _kept(f, args, box), [0]))
    return box[0]


def _via_takewhile(f: Callable[..., Any], *args: Any) -> Any:
    box: list[Any] = []
    next(itertools.takewhile(lambda _: _kept(f, args, box), [0]))
    return box[0]


def _via_filterfalse(f: Callable[..., Any], *args: Any) -> Any:
    box: list[Any] = []
    next(itertools.filterfalse(lambda _: not _kept(f, args, box), [0]))
    return box[0]


def _via_accumulate(f: Callable[..., Any], *args: Any) -> Any:
    box: list[Any] = []
    list(itertools.accumulate([0, 0], lambda a, b: _kept(f, args, box)))
    return box[0]


def _via_calliter(f: Callable[..., Any], *args: Any) -> Any:
    box: list[Any] = []
    next(iter(lambda: _kept(f, args, box), None))
    return box[0]


HANDLER = "SDK handler (ours: _dispatch, generation, Pipeline.run)"

STEPS: dict[str, tuple[str, Callable[..., Any]]] = {
    # step: (the C function callgrind names, how a call goes through it)
    HANDLER: ("sys_call_tracing", lambda f, *a: sys.call_tracing(f, a)),
    "SDK result validation and dump (runner._serialize)": (
        "functools_reduce",
        lambda f, *a: functools.reduce(lambda _, __: f(*a), [0], None),
    ),
    "route": ("_operator_call", operator.call),
    "  catalog.route": ("builtin_format", _via_format),
    "authorize": ("methodcaller_call", lambda f, *a: operator.methodcaller("__call__", *a)(f)),
    "invoke": ("starmap_next", lambda f, *a: next(itertools.starmap(f, [a]))),
    "  invoker guards (seat, scope, deadline, health), entered and left": ("accumulate_next", _via_accumulate),
    "  within (coalescer, containment, provider read)": ("calliter_iternext", _via_calliter),
    "  contained (provider read)": ("builtin_abs", _via_abs),
    "  provider read (the fixture's)": ("builtin_round", _via_round),
    "evidence": ("dropwhile_next", _via_dropwhile),
    "  receipt (read_receipt, content_digest)": ("builtin_dir", _via_dir),
    "wire.shape": ("takewhile_next", _via_takewhile),
    "audit line (Pipeline._write)": ("filterfalse_next", _via_filterfalse),
}


SPLIT: dict[str, str] = {
    # a piece of the read, measured in a window of its own: the STEPS entry whose trampoline it borrows
    "Exchange(...), in Pipeline.run": "  catalog.route",
    "Gate(...), in Pipeline.run": "  invoker guards (seat, scope, deadline, health), entered and left",
    "CredentialScope(...), in Pipeline.run and Coalescer.run": "  receipt (read_receipt, content_digest)",
    "ReadRequest(...), in ReadResource.invoke": "  provider read (the fixture's)",
    "take_seat": "route",
    "leave_seat": "authorize",
    "enter_scope": "invoke",
    "exit_scope": "evidence",
    "deadline_after": "wire.shape",
    "UpstreamHealth.ended": "audit line (Pipeline._write)",
    "Coalescer.run (containment and provider read in it)": "  within (coalescer, containment, provider read)",
    "contained (provider read in it)": "  contained (provider read)",
    "read_receipt": "SDK result validation and dump (runner._serialize)",
    "content_digest": HANDLER,
}


def _through(step: str) -> Callable[..., Any]:
    return STEPS[SPLIT.get(step, step)][1]


def _stepped(step: str, coro: Any) -> Any:
    """Step ``coro`` once through ``step``'s trampoline; it must finish (its value is returned)."""
    finished, value = _through(step)(_once, coro)
    if not finished:
        coro.close()
        raise RuntimeError(f"{step}: the coroutine suspended; this harness needs reads that do not")
    return value


def _once(coro: Any) -> tuple[bool, Any]:
    """``(True, value)`` when ``coro`` finishes in one step, else ``(False, None)``; inside the
    trampoline (a ``StopIteration`` out of it would end an iterator trampoline's iteration)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return True, done.value
    return False, None


_undo: list[tuple[Any, str, Any]] = []
"""What :func:`_unpatch` puts back: ``(owner, attribute, original)``."""


def _patch(owner: Any, name: str, value: Any) -> None:
    _undo.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)))
    setattr(owner, name, value)


def _unpatch() -> None:
    while _undo:
        owner, name, original = _undo.pop()
        setattr(owner, name, original)


def _wrap_sync(owner: Any, name: str, step: str) -> None:
    original = getattr(owner, name)
    via = _through(step)
    if isinstance(owner, type):
        _patch(owner, name, lambda self, *a, **k: via(functools.partial(original, self, **k), *a))
    else:
        _patch(owner, name, lambda *a, **k: via(functools.partial(original, **k), *a))


def _wrap_async(owner: Any, name: str, step: str) -> None:
    original = getattr(owner, name)

    async def wrapped(*a: Any, **k: Any) -> Any:
        return _stepped(step, original(*a, **k))

    _patch(owner, name, wrapped)


def _patch_handler(server: Any) -> None:
    """The lowlevel server's ``resources/read`` handler, stepped through its trampoline."""
    from mcp.server.lowlevel.server import HandlerEntry

    entry = server._request_handlers["resources/read"]

    async def handler(ctx: Any, params: Any) -> Any:
        return _stepped(HANDLER, entry.handler(ctx, params))

    _patch(server, "_request_handlers", {**server._request_handlers})
    server._request_handlers["resources/read"] = HandlerEntry(entry.params_type, handler)


def _patch_serialize() -> None:
    from mcp.server.runner import ServerRunner

    _wrap_sync(ServerRunner, "_serialize", "SDK result validation and dump (runner._serialize)")


def _patch_split() -> None:
    """Pieces of the read, each through a trampoline of its own (see :data:`SPLIT`)."""
    from mcp_providers._serve import pipeline
    from mcp_providers._serve.methods import resources
    from mcp_providers._serve.state import coalesce
    from mcp_providers._serve.steps import health, invoker

    for owner, name, label in (
        (pipeline, "Exchange", "Exchange(...), in Pipeline.run"),
        (pipeline, "Gate", "Gate(...), in Pipeline.run"),
        (pipeline, "CredentialScope", "CredentialScope(...), in Pipeline.run and Coalescer.run"),
        (coalesce, "CredentialScope", "CredentialScope(...), in Pipeline.run and Coalescer.run"),
        (resources, "ReadRequest", "ReadRequest(...), in ReadResource.invoke"),
        (resources, "read_receipt", "read_receipt"),
        (resources, "content_digest", "content_digest"),
        (health.UpstreamHealth, "ended", "UpstreamHealth.ended"),
        *((invoker, name, name) for name in ("take_seat", "leave_seat", "enter_scope", "exit_scope", "deadline_after")),
    ):
        _wrap_sync(owner, name, label)
    _wrap_async(coalesce.Coalescer, "run", "Coalescer.run (containment and provider read in it)")
    _wrap_async(invoker, "contained", "contained (provider read in it)")


def _patch_stages() -> None:
    """The composed read's four stages, wire.shape and the audit line, each through its trampoline."""
    from mcp_providers._serve import pipeline
    from mcp_providers._serve.methods import resources

    for name, step in (("route", "route"), ("authorize", "authorize"), ("evidence", "evidence")):
        _wrap_sync(resources.ReadResource, name, step)
    _wrap_async(resources.ReadResource, "invoke", "invoke")
    _wrap_sync(pipeline.wire, "shape", "wire.shape")
    _wrap_sync(pipeline.Pipeline, "_write", "audit line (Pipeline._write)")


def _patch_inner() -> None:
    """Inside the stages: the catalog's route, the invoker's guards, ``within``, the receipt."""
    from mcp_providers._host.catalog import Catalog
    from mcp_providers._serve.methods import resources
    from mcp_providers._serve.steps import health, invoker

    _wrap_sync(Catalog, "route", "  catalog.route")
    guards = "  invoker guards (seat, scope, deadline, health), entered and left"
    for name in ("take_seat", "leave_seat", "enter_scope", "exit_scope", "deadline_after"):
        _wrap_sync(invoker, name, guards)
    _wrap_sync(health.UpstreamHealth, "ended", guards)
    _wrap_async(invoker, "within", "  within (coalescer, containment, provider read)")
    for name in ("read_receipt", "content_digest"):
        _wrap_sync(resources, name, "  receipt (read_receipt, content_digest)")


def _patch_innermost() -> None:
    from mcp_providers._serve.steps import invoker

    _wrap_async(invoker, "contained", "  contained (provider read)")
    _wrap_async(fixtures.Generated, "read", "  provider read (the fixture's)")


def _noop() -> None:
    return None


WINDOWS = (
    "MCPServer (OTel off)",
    "composed, the handler",
    "composed, its stages",
    "composed, inside the stages",
    "composed, innermost",
    "composed, pieces",
    "SDK floor",
    "trampolines alone (a no-op through each)",
)


async def _window(client: Any, uri: str, reads: int) -> None:
    for _ in range(20):
        await client.read_resource(uri)  # the wrappers warm too
    os.getppid()  # callgrind --zero-before: the window starts
    for _ in range(reads):
        await client.read_resource(uri)
    os.getpgrp()  # callgrind --dump-before: the window ends


async def _windows(reads: int) -> None:
    """Under callgrind: one window of ``reads`` reads per :data:`WINDOWS` entry."""
    from mcp import Client

    uri = fixtures.fixed_uri(0, 3)
    mcpserver, composed, floor = fixtures.mcpserver(1, otel=False), fixtures.composed(1).server, fixtures.sdk_floor()
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(s, mode="auto", cache=None)) for s in (mcpserver, composed, floor)
        ]
        for client in clients:  # warm up, unpatched
            for _ in range(200):
                await client.read_resource(uri)
        _patch_serialize()
        _patch_handler(mcpserver._lowlevel_server)
        await _window(clients[0], uri, reads)
        _unpatch()
        windows: list[tuple[Callable[[], None], ...]] = [
            (_patch_serialize, lambda: _patch_handler(composed)),
            (_patch_stages,),
            (_patch_inner,),
            (_patch_innermost,),
            (_patch_split,),
        ]
        for patches in windows:
            for patch in patches:
                patch()
            await _window(clients[1], uri, reads)
            _unpatch()
        _patch_serialize()
        await _window(clients[2], uri, reads)
        _unpatch()
        os.getppid()
        for _ in range(reads):
            for _, via in STEPS.values():
                via(_noop)
        os.getpgrp()


def _inclusive(dump: Path, wanted: set[str]) -> tuple[int, dict[str, tuple[int, int]]]:
    """``(instructions, {C function: (calls, inclusive instructions)})`` for ``wanted`` callees."""
    names: dict[str, str] = {}
    total = 0
    callee = ""
    out: dict[str, list[int]] = {}
    lines = dump.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("summary:"):
            total = int(line.split()[1])
        elif match := re.match(r"c?fn=\((\d+)\)(?: (.*))?", line):
            if match.group(2):
                names[match.group(1)] = re.sub(r"'\d+$", "", match.group(2))
            if line.startswith("cfn="):
                callee = names.get(match.group(1), "")
        elif line.startswith("calls=") and callee in wanted:
            counted = out.setdefault(callee, [0, 0])
            counted[0] += int(line.split("=")[1].split()[0])
            counted[1] += int(lines[i + 1].split()[1])
    return total, {k: (v[0], v[1]) for k, v in out.items()}


def _rows(
    reads: int, counted: dict[str, tuple[int, int]], alone: dict[str, tuple[int, int]], split: bool
) -> Iterator[str]:
    """One line per step counted: inclusive instructions per read, less its trampolines' own."""
    for step, (c_name, _) in [*STEPS.items(), *((label, STEPS[of]) for label, of in SPLIT.items())]:
        if c_name in counted and (step in SPLIT) == split:
            calls, cost = counted[c_name]
            base_calls, base_cost = alone.get(c_name, (1, 0))
            net = cost - calls * base_cost / base_calls
            yield f"  {step:70} {net / reads / 1000:8.1f}k  ({calls / reads:g} calls per read)"


def measure(reads: int) -> None:
    """Run :func:`_windows` under callgrind and print each window's steps (module docstring).

    :raises SystemExit: valgrind is not installed, or the run under it failed.
    """
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH: install it (apt-get install valgrind) to count instructions")
    wanted = {c_name for c_name, _ in STEPS.values()}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--zero-before=os_getppid", "--dump-before=os_getpgrp"]
        command += [f"--callgrind-out-file={out}", sys.executable, "-m", "benchmarks.read_steps"]
        command += ["--window", str(reads)]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        dumps = sorted(Path(folder).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        if done.returncode != 0 or len(dumps) != len(WINDOWS):
            raise SystemExit(f"the run under callgrind failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        counted = {name: _inclusive(dump, wanted) for name, dump in zip(WINDOWS, dumps, strict=True)}
    print(f"in-memory read, mode auto: instructions per read, inclusive ({reads} reads per window, callgrind)")
    alone = counted[WINDOWS[-1]][1]
    for name, (total, steps) in counted.items():
        print(f"{name}: {total / reads / 1000:.1f}k per read in all (the cyclic GC's share included)")
        for row in _rows(reads, steps, alone if name != WINDOWS[-1] else {}, name == "composed, pieces"):
            print(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=100, help="reads counted per window (default 100)")
    parser.add_argument("--window", type=int, help=argparse.SUPPRESS)  # the run under callgrind
    args = parser.parse_args()
    if args.window is not None:
        anyio.run(_windows, args.window)
    else:
        measure(args.reads)


if __name__ == "__main__":
    main()
