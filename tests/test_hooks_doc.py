"""docs/hooks.md is generated from the hookspecs and their changelog, and the changelog is kept.

Between the ``generated`` markers, docs/hooks.md is rendered from ``core/hookspecs.py`` (one
section per hookspec, then the changelog of the hook contract); the compatibility policy around
them is written by hand. Regenerate after changing core/hookspecs.py::

    MCP_PROVIDERS_WRITE_DOCS=1 uv run pytest tests/test_hooks_doc.py

The changelog must account for every hookspec and every argument it has, for each change of
``firstresult``, and for each deprecated argument, whose warning names a removal still ahead.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from packaging.version import Version

from mcp_providers import MCPProvidersRemovedIn1Warning, hookspecs
from mcp_providers.errors import MCPProvidersDeprecationWarning
from mcp_providers.hookspecs import HookChange

HOOKS_MD = Path(__file__).resolve().parent.parent / "docs" / "hooks.md"
BEGIN = "<!-- generated from core/hookspecs.py by tests/test_hooks_doc.py: begin (do not edit by hand) -->"
END = "<!-- generated: end -->"
REMOVED_IN = re.compile(r"MCPProvidersRemovedIn(\d+)Warning")


def _specs() -> list[Callable[..., object]]:
    specs = [f for _, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, "mcp_providers_spec")]
    return sorted(specs, key=lambda f: f.__code__.co_firstlineno)


def _changelog_table(changelog: Sequence[HookChange]) -> list[str]:
    lines = [
        "## Changelog of the hook contract",
        "",
        "Oldest first.",
        "",
        "| core | hook | change | what |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c.version} | `{c.hook}` | {c.kind} | {c.text.replace('``', '`')} |" for c in changelog]
    return [*lines, ""]


def render_generated() -> str:
    """One section per hookspec, in source order (signature, firstresult note, deprecated
    arguments, docstring), then the changelog."""
    lines = []
    for f in _specs():
        signature = str(inspect.signature(f)).replace("'", "")
        lines += [f"## `{f.__name__}`", "", "```python", f"def {f.__name__}{signature}", "```", ""]
        if f.mcp_providers_spec.get("firstresult"):  # type: ignore[attr-defined]
            lines += ["*firstresult*: the first non-`None` answer wins.", ""]
        for argument, warning in hookspecs.DEPRECATED_ARGUMENTS.get(f.__name__, {}).items():
            lines += [f"*deprecated argument* `{argument}` ({type(warning).__name__}): {warning}", ""]
        lines += [inspect.getdoc(f) or "", ""]
    return "\n".join([*lines, *_changelog_table(hookspecs.CHANGELOG)]).rstrip() + "\n\n"


def _split(text: str) -> tuple[str, str, str]:
    head, begin, rest = text.partition(BEGIN + "\n")
    body, end, tail = rest.partition(END)
    assert begin and end, f"docs/hooks.md needs the markers {BEGIN!r} and {END!r}"
    return head, body, tail


def test_hooks_md_matches_the_hookspecs() -> None:
    head, body, tail = _split(HOOKS_MD.read_text())
    expected = render_generated()
    if os.environ.get("MCP_PROVIDERS_WRITE_DOCS"):
        HOOKS_MD.write_text(f"{head}{BEGIN}\n{expected}{END}{tail}")
        body = expected
    assert body == expected, (
        "docs/hooks.md is stale; regenerate with MCP_PROVIDERS_WRITE_DOCS=1 uv run pytest tests/test_hooks_doc.py"
    )


def test_hooks_md_keeps_its_compatibility_policy() -> None:
    text = HOOKS_MD.read_text()
    for heading in ("## Compatibility policy", "## Changelog of the hook contract"):
        assert heading in text
    for term in ("Requires-Dist", "required_plugins", "MCPProvidersRemovedIn1Warning", "warn_on_impl_args"):
        assert term in _split(text)[2], f"the policy (after the generated part) no longer explains {term}"


# -- the changelog accounts for the contract ---------------------------------------------------------

Spec = tuple[tuple[str, ...], bool]
"""A hookspec's argument names and whether it is firstresult."""


def _current_specs() -> dict[str, Spec]:
    return {
        f.__name__: (tuple(inspect.signature(f).parameters), bool(f.mcp_providers_spec.get("firstresult")))  # type: ignore[attr-defined]
        for f in _specs()
    }


def _history_problems(hook: str, spec: Spec, entries: list[HookChange]) -> list[str]:
    added = [c for c in entries if c.kind == "added" and c.text.startswith(f"``{hook}(")]
    if len(added) != 1:
        return [f"{hook}: needs exactly one 'added' entry starting ``{hook}(...)``, has {len(added)}"]
    first = re.match(rf"``{hook}\(([^)]*)\)``", added[0].text)
    arguments = [a.strip() for a in first.group(1).split(",") if a.strip()] if first else []
    arguments += [m for c in entries if c.kind == "added" for m in re.findall(r"^Argument ``(\w+)``", c.text)]
    problems = []
    if sorted(arguments) != sorted(spec[0]):
        problems.append(
            f"{hook}: the changelog adds ({', '.join(arguments)}) but the hookspec takes ({', '.join(spec[0])})"
        )
    firstresult = "``firstresult``" in added[0].text
    flips = [c for c in entries if c.kind == "changed" and "firstresult" in c.text]
    if firstresult ^ (len(flips) % 2 == 1) != spec[1]:
        problems.append(f"{hook}: firstresult is {spec[1]} but the changelog does not say when it became so")
    return problems


def _deprecation_problems(
    hook: str, spec: Spec, entries: list[HookChange], deprecated: Mapping[str, Warning], core: Version
) -> list[str]:
    problems = []
    for argument, warning in deprecated.items():
        name = type(warning).__name__
        removal = REMOVED_IN.fullmatch(name)
        if argument not in spec[0]:
            problems.append(f"{hook}({argument}): deprecated but the hookspec has no such argument")
        if not isinstance(warning, MCPProvidersDeprecationWarning) or removal is None:
            problems.append(f"{hook}({argument}): {name} is not an MCPProvidersRemovedIn<N>Warning")
        elif int(removal.group(1)) <= core.major:
            problems.append(f"{hook}({argument}): due for removal in {removal.group(1)}.0, and this core is {core}")
        if not any(c.kind == "deprecated" and f"``{argument}``" in c.text for c in entries):
            problems.append(f"{hook}({argument}): no 'deprecated' changelog entry naming ``{argument}``")
    return problems


def changelog_problems(
    specs: Mapping[str, Spec],
    changelog: Sequence[HookChange],
    deprecated: Mapping[str, Mapping[str, Warning]],
    core: Version,
) -> list[str]:
    """What the changelog does not account for (see the module docstring)."""
    problems = [f"{c.hook}: in the changelog but no hookspec" for c in changelog if c.hook not in specs]
    for hook, spec in specs.items():
        entries = [c for c in changelog if c.hook == hook]
        problems += _history_problems(hook, spec, entries)
        problems += _deprecation_problems(hook, spec, entries, deprecated.get(hook, {}), core)
    return problems


CORE = Version(importlib.metadata.version("mcp-providers"))


def test_the_changelog_accounts_for_every_hook_argument_and_deprecation() -> None:
    assert changelog_problems(_current_specs(), hookspecs.CHANGELOG, hookspecs.DEPRECATED_ARGUMENTS, CORE) == []


def test_authorize_leaving_firstresult_is_in_the_changelog() -> None:
    assert _current_specs()["authorize"][1] is False
    changes = [c for c in hookspecs.CHANGELOG if c.hook == "authorize" and c.kind == "changed"]
    assert any("No longer ``firstresult``" in c.text for c in changes)


def _without(predicate: Callable[[HookChange], bool]) -> tuple[HookChange, ...]:
    return tuple(c for c in hookspecs.CHANGELOG if not predicate(c))


DEPRECATE_SUBJECT = {"authorize": {"subject": MCPProvidersRemovedIn1Warning("authorize(subject): use principal")}}
NOTED = HookChange("0.1.0", "authorize", "deprecated", "``subject``: read ``principal.subject``.")


@pytest.mark.parametrize(
    ("specs", "changelog", "deprecated", "core", "problem"),
    [
        pytest.param(
            {
                **_current_specs(),
                "authorize": (("subject", "action", "target", "settings", "principal", "tenant"), False),
            },
            hookspecs.CHANGELOG,
            {},
            CORE,
            "authorize: the changelog adds (subject, action, target, settings, principal) but the hookspec takes",
            id="an argument the changelog does not add",
        ),
        pytest.param(
            _current_specs(),
            _without(lambda c: c.kind == "changed" and "firstresult" in c.text),
            {},
            CORE,
            "authorize: firstresult is False but the changelog does not say when it became so",
            id="firstresult dropped without an entry",
        ),
        pytest.param(
            _current_specs(),
            hookspecs.CHANGELOG,
            DEPRECATE_SUBJECT,
            CORE,
            "authorize(subject): no 'deprecated' changelog entry naming ``subject``",
            id="a deprecation without an entry",
        ),
        pytest.param(
            _current_specs(),
            (*hookspecs.CHANGELOG, NOTED),
            DEPRECATE_SUBJECT,
            Version("1.0.0"),
            "authorize(subject): due for removal in 1.0, and this core is 1.0.0",
            id="a deprecation past its removal release",
        ),
        pytest.param(
            _current_specs(),
            (*hookspecs.CHANGELOG, NOTED),
            {"authorize": {"subject": DeprecationWarning("old")}},
            CORE,
            "authorize(subject): DeprecationWarning is not an MCPProvidersRemovedIn<N>Warning",
            id="a warning that names no removal",
        ),
    ],
)
def test_the_changelog_check_names_what_is_missing(
    specs: dict[str, Spec],
    changelog: tuple[HookChange, ...],
    deprecated: dict[str, dict[str, Warning]],
    core: Version,
    problem: str,
) -> None:
    problems = changelog_problems(specs, changelog, deprecated, core)
    assert any(p.startswith(problem) for p in problems), problems


def test_a_kept_deprecation_passes_the_changelog_check() -> None:
    assert changelog_problems(_current_specs(), (*hookspecs.CHANGELOG, NOTED), DEPRECATE_SUBJECT, CORE) == []
