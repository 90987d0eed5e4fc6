"""Break one guard line at a time and check that a test notices (issue 24, "Must show" 2).

Each case names a file, an exact snippet that must occur in it once, what to put instead, and the
pytest node ids that must then fail. The runner applies the mutant, runs those tests, restores the
file whatever happens, and prints one line per case: ``killed`` (a test failed, as it should) or
``SURVIVED`` (every test passed with the guard broken). It exits 1 when a mutant survives or a
snippet is missing (the table is out of date), else 0.

Run: ``uv run python scripts/mutation_check.py [--list] [name-substring ...]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300  # seconds per case


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    snippet: str
    replacement: str
    tests: tuple[str, ...]


READ = "tests/test_read_scope.py::"
TRUST = READ + "test_no_frame_on_the_stack_makes_a_write_in_a_read_trusted"
ALLOWED = READ + "test_bytecode_caches_and_configured_log_files_may_still_be_written"
DIR_FD = READ + "test_a_dir_fd_relative_open_is_judged_where_the_os_opens_it"
WIRE = READ + "test_http_below_the_pool_is_refused_however_it_is_sent"
TLS = READ + "test_http_over_tls_is_judged_in_its_plaintext"
WARN_ONCE = (
    READ + "test_a_raw_request_let_through_in_warn_mode_is_recorded_once",
    "tests/test_side_effects.py::test_warn_mode_serves_the_read_and_records_the_violation",
)
SCOPE = "core/_sideeffects.py"

CASES: tuple[Case, ...] = (
    # the read scope's file channel
    Case(
        "file: bytecode caches need an existing source",
        SCOPE,
        "return os.path.isfile(importlib.util.source_from_cache(path))",
        "return bool(importlib.util.source_from_cache(path))",
        (TRUST,),
    ),
    Case(
        "file: every write is an expected one",
        SCOPE,
        "    if all(_is_bytecode_cache(p) for p in paths):\n        return True",
        "    if True:\n        return True",
        (TRUST,),
    ),
    Case(
        "file: log files only in the handler's own mode",
        SCOPE,
        "return args[1] is not None and _log_files.get(paths[0]) == args[1]",
        "return _log_files.get(paths[0]) == args[1]",
        (DIR_FD,),
    ),
    Case(
        "file: log rotation is allowed",
        SCOPE,
        "    if path in _log_files:\n        return True\n    return any(",
        "    return False\n    return any(",
        (ALLOWED,),
    ),
    Case(
        "file: os.open's dir_fd is applied",
        SCOPE,
        "if pending is not None and pending[0] is raw:",
        "if False:",
        (DIR_FD,),
    ),
    Case(
        "file: a relative os.open with an unknown dir_fd is refused",
        SCOPE,
        "    if relative:\n        cache = _resolve(raw, None)",
        "    if False:\n        cache = _resolve(raw, None)",
        (DIR_FD,),
    ),
    Case(
        "file: os.open is wrapped at install",
        SCOPE,
        "            os.open = _guarded_os_open",
        "            pass",
        (DIR_FD,),
    ),
    # the read scope's HTTP channel
    Case(
        "http: httpcore2 connections below the pool are guarded",
        SCOPE,
        'for name in ("HTTPConnection", "HTTP11Connection", "HTTP2Connection"):',
        "for name in ():",
        (WIRE,),
    ),
    Case(
        "http: a request line with an unsafe method is judged on the wire",
        SCOPE,
        "judged = verb not in _WIRE_SAFE and _judge_wire(",
        "judged = False and _judge_wire(",
        (WIRE,),
    ),
    Case(
        "http: a body header on a safe method is judged on the wire",
        SCOPE,
        "            if not judged:\n                judged = _judge_wire(",
        "            if False:\n                judged = _judge_wire(",
        (WIRE,),
    ),
    Case(
        "http: an unfinished line is carried to the next send",
        SCOPE,
        "wire.carry, wire.head, wire.skip = carry, head, skip",
        'wire.carry, wire.head, wire.skip = b"", head, skip',
        (WIRE,),
    ),
    Case(
        "http: sockets and TLS objects are guarded at install",
        SCOPE,
        "        _patch_wire()\n",
        "",
        (WIRE,),
    ),
    Case(
        "http: TLS plaintext written through ssl.SSLObject (asyncio, anyio) is judged",
        SCOPE,
        '    _wire_guard(ssl.SSLObject, "write", _first_bytes, "https")',
        "    pass",
        (TLS,),
    ),
    Case(
        "http: TLS plaintext written through ssl.SSLSocket is judged",
        SCOPE,
        '    for name in ("send", "sendall", "write"):\n        _wire_guard(ssl.SSLSocket,',
        "    for name in ():\n        _wire_guard(ssl.SSLSocket,",
        (TLS,),
    ),
    Case(
        "http: what http.client let through is not recorded twice",
        SCOPE,
        "            scope._passed = [*(scope._passed or ()), (method.upper(), _path_of(full))]",
        "            pass",
        WARN_ONCE,
    ),
    Case(
        "http: a refusal a library swallowed still fails the read",
        "core/_serve/steps/invoker.py",
        "                raise scope.refused from None",
        "                pass",
        (WIRE,),
    ),
)


def run_case(case: Case) -> tuple[bool | None, str]:
    """``(True, ...)`` killed, ``(False, ...)`` survived, ``(None, why)`` could not be applied."""
    path = ROOT / case.file
    original = path.read_text()
    count = original.count(case.snippet)
    if count != 1:
        return None, f"snippet found {count} times in {case.file}, expected once"
    try:
        path.write_text(original.replace(case.snippet, case.replacement))
        command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *case.tests]
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return True, f"the tests hung for {TIMEOUT} s (a hang fails CI too)"
    finally:
        path.write_text(original)
    lines = done.stdout.strip().splitlines()
    return done.returncode != 0, lines[-1] if lines else done.stderr.strip()[-200:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="run the cases whose name contains one of these")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or any(o in c.name for o in args.only)]
    if args.list:
        for case in cases:
            print(f"{case.name}  ({case.file}; {' '.join(case.tests)})")
        return 0
    bad = 0
    for case in cases:
        started = time.monotonic()
        killed, detail = run_case(case)
        verdict = {True: "killed  ", False: "SURVIVED", None: "BROKEN  "}[killed]
        bad += killed is not True
        print(f"{verdict} {case.name}  [{time.monotonic() - started:.0f}s: {detail}]", flush=True)
    print(f"{len(cases) - bad} of {len(cases)} mutants killed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
