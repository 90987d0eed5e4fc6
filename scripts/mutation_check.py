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


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    snippet: str
    replacement: str
    tests: tuple[str, ...]


BASE = "tests/test_base_exceptions.py::"
IN_MEMORY = BASE + "test_in_memory_a_base_exception_fails_only_its_request"
AUTHORIZE_RAISES = BASE + "test_in_memory_a_base_exception_in_authorize_denies[custom]"
OWN_CANCEL = BASE + "test_the_requests_own_cancellation_still_cancels_it"
SPELLING = "tests/test_policy_by_construction.py::test_every_spelling_of_a_rejected_policy_stops_serve"
CONSTRUCTION = "tests/test_policy_by_construction.py::"
CONTAIN = "core/_host/contain.py"
SCAN = "core/_host/hookscan.py"

CASES: tuple[Case, ...] = (
    # fail closed on raise: the gate's except branch and the containment around plugin code
    Case(
        "raise: a raising authorize denies",
        "core/_serve/steps/gate.py",
        'return Decision(False, f"the authorize hook of plugin {impl.plugin!r} failed")',
        "return None",
        (AUTHORIZE_RAISES,),
    ),
    Case(
        "raise: a BaseException from authorize reaches the gate as a failure",
        "core/_host/assembly.py",
        "contain_sync(record.manager.hook.authorize)",
        "record.manager.hook.authorize",
        (AUTHORIZE_RAISES,),
    ),
    Case(
        "raise: the invoker contains a provider's BaseException",
        "core/_serve/steps/invoker.py",
        "        call = contain_async(call)",
        "        pass",
        (IN_MEMORY + "[read-custom]", IN_MEMORY + "[tool call-custom]"),
    ),
    Case(
        "raise: a BaseException in provider code becomes Escaped",
        CONTAIN,
        "            if not escapes(exc):\n"
        "                raise  # this request's cancellation, or close() of this coroutine\n"
        "            raise Escaped(exc) from exc",
        "            raise",
        (IN_MEMORY + "[prompt-custom]", IN_MEMORY + "[completion-custom]"),
    ),
    Case(
        "raise: a CancelledError the provider raised itself is contained",
        CONTAIN,
        "return isinstance(exc, asyncio.CancelledError) and task.cancelling() > 0",
        "return isinstance(exc, asyncio.CancelledError)",
        (IN_MEMORY + "[read-cancelled]",),
    ),
    Case(
        "raise: the request's own cancellation is never contained",
        CONTAIN,
        "    if isinstance(exc, Exception) or cancels_this_task(exc):\n        return False",
        "    if isinstance(exc, Exception):\n        return False",
        (OWN_CANCEL,),
    ),
    Case(
        "raise: a sync hook's BaseException becomes Escaped",
        CONTAIN,
        "        except BaseException as exc:\n            raise Escaped(exc) from exc\n\n    contained.__wrapped__",
        "        finally:\n            pass\n\n    contained.__wrapped__",
        (AUTHORIZE_RAISES,),
    ),
    Case(
        "raise: the wire maps a BaseException from any pipeline stage",
        "core/_serve/steps/wire.py",
        "not (isinstance(exc, Exception) or escapes(exc))",
        "not isinstance(exc, Exception)",
        (BASE + "test_a_base_exception_in_check_watch_fails_only_that_subscribe[custom]",),
    ),
    Case(
        "raise: a lifespan that fails to start or while serving is recorded",
        "core/_serve/runtime.py",
        '                self._failures[self._provider] = f"{type(exc).__name__}: {exc}"',
        "                pass",
        (BASE + "test_a_lifespan_that_raises_a_base_exception_on_start_fails_only_its_provider[custom]",),
    ),
    Case(
        "raise: a lifespan's BaseException (start, poller, stop) ends only its own task",
        "core/_serve/runtime.py",
        "        except BaseException as exc:\n            if cancels_this_task(exc):\n"
        "                raise\n            when",
        "        except ZeroDivisionError as exc:\n            if cancels_this_task(exc):\n"
        "                raise\n            when",
        (
            BASE + "test_a_lifespan_that_raises_a_base_exception_on_stop_lets_the_others_stop[custom]",
            BASE + "test_a_poller_that_fails_while_serving_ends_only_its_provider[custom]",
        ),
    ),
    Case(
        "raise: a registration hook's BaseException rejects only its plugin",
        "core/_host/discovery.py",
        "        except BaseException as exc:\n            _reraise_interrupt(exc)\n"
        '            record.reject(f"hook {hook} raised',
        "        except Exception as exc:\n            _reraise_interrupt(exc)\n"
        '            record.reject(f"hook {hook} raised',
        (BASE + "test_a_base_exception_from_a_hook_or_a_declaration_rejects_only_its_plugin[custom]",),
    ),
    Case(
        "health: /healthz fails once the session manager has stopped",
        "core/_serve/transport/ops.py",
        "    if manager._task_group is None:",
        "    if False:",
        (BASE + "test_healthz_says_failing_once_the_session_manager_has_stopped",),
    ),
    Case(
        "metadata: discovery reads distributions one at a time when one is broken",
        "core/_host/discovery.py",
        "    except Exception:  # broken metadata somewhere on sys.path",
        "    except ZeroDivisionError:  # broken metadata somewhere on sys.path",
        ("tests/test_broken_metadata.py::test_broken_metadata_is_skipped_with_one_warning_naming_its_path",),
    ),
    Case(
        "metadata: pydantic's plugin loader is guarded",
        "core/_metadata.py",
        "        _loader.get_plugins()\n        return\n    except Exception:",
        "        _loader.get_plugins()\n        return\n    except ZeroDivisionError:",
        ("tests/test_broken_metadata.py::test_serve_starts_with_broken_metadata_on_the_path",),
    ),
    # fail closed at start-up: policies known by what pluggy registers
    Case(
        "start-up: specname names the hook",
        SCAN,
        'return str(opts.get("specname") or attr)',
        "return str(attr)",
        (SPELLING + "[specname under another name, provider hook raises]",),
    ),
    Case(
        "start-up: a wrapper-only authorize is refused",
        SCAN,
        '            if opts.get("hookwrapper") or opts.get("wrapper"):',
        "            if False:",
        (SPELLING + "[hookwrapper-only authorize (otherwise loads)]", SPELLING + "[new-style wrapper-only authorize]"),
    ),
    Case(
        "start-up: a marker pluggy cannot see is refused",
        SCAN,
        "        elif opts is None and _hook_name(_dynamic_opts(plugin, attr), attr) == AUTHORIZE:",
        "        elif False:",
        (SPELLING + "[functools.partial marked authorize]",),
    ),
    Case(
        "start-up: a failed import could have carried authorize",
        "core/_host/discovery.py",
        "        record.authorize_evidence = _unknown(record.name)",
        "        pass",
        (SPELLING + "[import fails before the hook is defined]",),
    ),
    Case(
        "start-up: require_plugins and stray authorize implementations stop serve",
        "core/_host/assembly.py",
        "        return lines + _unserved_required(self) + _stray_authorize(self.plugin_manager, self.records)\n"
        "\n    @functools",
        "        return lines\n\n    @functools",
        (
            CONSTRUCTION + "test_require_plugins_refuses_unless_each_is_served",
            SPELLING + "[import code registers a second object into the composition's manager]",
        ),
    ),
    Case(
        "start-up: an authorize registered by no served plugin is found",
        "core/_host/assembly.py",
        "            if id(impl.plugin) not in allowed:",
        "            if False:",
        (SPELLING + "[import code registers a second object into the composition's manager]",),
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
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
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
