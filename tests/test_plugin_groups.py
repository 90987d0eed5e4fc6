"""Policy plugins declare themselves; a broken provider plugin never stops the others (round 4
items 20 and 22).

Item 22: since the fail-closed fix one installed plugin whose import failed made ``serve`` refuse
to start, even when nothing selected it, because what it would register was unknown. Now a plugin
says what it is by its entry-point group: one of ``mcp_providers.policy`` that fails in any way
stops ``serve``; one of ``mcp_providers`` that fails is left out; one of ``mcp_providers`` that
defines ``authorize`` is refused and stops ``serve`` (its rules never silently vanish).

Item 20: one module under two entry-point names crashed ``serve``, ``check`` and ``plugins`` with
pluggy's ``ValueError`` traceback. Now it loads once, under the first name, and the second is
rejected with one line naming both.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefork import python

from mcp_providers import compose, load_config
from mcp_providers.errors import CompositionError
from mcp_providers.hookspecs import POLICY_GROUP, PROJECT

PROVIDER = """
from mcp_providers import Content, Resource, ResourceProvider, hookimpl


class _P(ResourceProvider):
    name = "NAME-provider"
    prefixes = ("SCHEME://",)

    def resources(self):
        return [Resource(uri="SCHEME://x", name="x", mime_type="text/plain")]

    async def read(self, request):
        return Content(text="x")


@hookimpl
def register_resource_providers():
    return [_P()]
"""

DENY_ALL = """
from mcp_providers import Decision, hookimpl


@hookimpl
def authorize(subject, action, target):
    return Decision(False, "NAME denies everything")
"""


def _install(site: Path, name: str, source: str, *, group: str = PROJECT, names: tuple[str, ...] = ()) -> None:
    info = site / f"{name}_dist-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-dist\nVersion: 0.1\n")
    lines = "".join(f"{n} = {name}\n" for n in names or (name,))
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    (site / f"{name}.py").write_text(source.replace("SCHEME", name.replace("_", "-")).replace("NAME", name))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    for key in [k for k in os.environ if k.startswith("MCP_PROVIDERS_")]:
        monkeypatch.delenv(key)
    before = set(sys.modules)
    yield root
    for module in set(sys.modules) - before:
        if module.startswith("grp"):
            del sys.modules[module]


def _compose(tmp_path: Path, text: str = "") -> object:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(text)
    return compose(load_config(path))


def _record(composition: object, name: str) -> object:
    return next(r for r in composition.records if r.name == name)  # type: ignore[attr-defined]


BROKEN_PROVIDERS = {
    "import error": "import grp_missing_dependency  # noqa\n" + PROVIDER,
    "SystemExit at import": PROVIDER + "raise SystemExit(3)\n",
    "syntax error": PROVIDER + "def (:\n",
    # tester thirteen: a KeyboardInterrupt a plugin raised itself ended check and serve (exit 130)
    "KeyboardInterrupt at import": PROVIDER + "raise KeyboardInterrupt\n",
}


@pytest.mark.parametrize("selected", [False, True], ids=["not-selected", "selected"])
@pytest.mark.parametrize("source", BROKEN_PROVIDERS.values(), ids=BROKEN_PROVIDERS.keys())
def test_a_provider_plugin_whose_import_fails_is_left_out_and_the_others_serve(
    site: Path, tmp_path: Path, source: str, selected: bool
) -> None:
    _install(site, "grp_broken", source)
    _install(site, "grp_fine", PROVIDER)
    allow = '"grp_broken", "grp_fine", "policy"' if selected else '"grp_fine", "policy"'
    composition = _compose(tmp_path, f"allow = [{allow}]\n[plugins.policy]\n")
    assert composition.policy_failures == []  # type: ignore[attr-defined]
    assert composition.server is not None  # type: ignore[attr-defined]
    assert _record(composition, "grp_fine").status == "loaded"  # type: ignore[attr-defined]
    assert _record(composition, "grp_broken").status == ("rejected" if selected else "disabled")  # type: ignore[attr-defined]


def test_a_provider_plugin_whose_import_never_ends_is_left_out_by_name_within_the_bound(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tester thirteen: a plugin sleeping at import hung check and serve with no message. Its import
    is bounded (``isolation.PLUGIN_SECONDS``): past it the plugin is left out, named, the others serve."""
    from mcp_providers._host import isolation

    monkeypatch.setattr(isolation, "PLUGIN_SECONDS", 1.0)
    _install(site, "grp_hung", "import threading\nthreading.Event().wait()\n" + PROVIDER)
    _install(site, "grp_fine", PROVIDER)
    composition = _compose(tmp_path, 'allow = ["grp_hung", "grp_fine", "policy"]\n[plugins.policy]\n')
    assert composition.server is not None  # type: ignore[attr-defined]
    assert _record(composition, "grp_fine").status == "loaded"  # type: ignore[attr-defined]
    hung = _record(composition, "grp_hung")
    assert hung.status == "rejected" and "did not finish within 1 s" in (hung.reason or ""), hung  # type: ignore[attr-defined]


MAIN_THREAD_ONLY = {
    "a signal handler": "import signal\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)\n",
    "a wakeup fd": "import signal\nsignal.set_wakeup_fd(-1)\n",
    "a loop's signal handler": (
        "import asyncio, signal\nloop = asyncio.new_event_loop()\n"
        "try:\n    loop.add_signal_handler(signal.SIGUSR2, print)\nfinally:\n    loop.close()\n"
    ),
    "the thread's event loop": "import asyncio\nasyncio.get_event_loop()\n",
    "a signal handler, then an interrupt": (
        "import signal\nsignal.signal(signal.SIGUSR2, signal.SIG_IGN)\nraise KeyboardInterrupt\n"
    ),
}


@pytest.mark.parametrize("start", MAIN_THREAD_ONLY.values(), ids=MAIN_THREAD_ONLY.keys())
def test_a_plugin_whose_import_needs_the_main_thread_is_left_out_saying_where_to_do_it(
    site: Path, tmp_path: Path, start: str
) -> None:
    """Plugins are imported in a thread of their own, bounded (tester thirteen). One that installs a
    signal handler or asks for the thread's event loop at import is left out, told to do that in
    its provider's lifespan (tester fifteen found it refused with the stdlib's words alone; tester
    sixteen found a retry on the main thread unbounded and uncontained), and the others serve."""
    _install(site, "grp_main", PROVIDER + start)
    _install(site, "grp_fine", PROVIDER)
    composition = _compose(tmp_path, 'allow = ["grp_main", "grp_fine", "policy"]\n[plugins.policy]\n')
    assert _record(composition, "grp_fine").status == "loaded"  # type: ignore[attr-defined]
    record = _record(composition, "grp_main")
    reason = record.reason or ""  # type: ignore[attr-defined]
    assert record.status == "rejected", record  # type: ignore[attr-defined]
    if "KeyboardInterrupt" not in start:
        assert "needs the main thread" in reason and "in the provider's lifespan" in reason, reason


def test_a_second_entry_point_of_an_imported_module_runs_no_unbounded_plugin_code(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tester sixteen: once one entry point had imported a module, another of the same module was
    loaded directly, so a module ``__getattr__`` behind it ran unbounded and could end the process."""
    from mcp_providers._host import isolation

    monkeypatch.setattr(isolation, "PLUGIN_SECONDS", 1.0)
    source = PROVIDER + (
        "def __getattr__(name):\n"
        "    if name == 'hang':\n        import threading; threading.Event().wait()\n"
        "    if name == 'boom':\n        raise KeyboardInterrupt\n"
        "    raise AttributeError(name)\n"
    )
    (site / "grp_multi.py").write_text(source.replace("SCHEME", "grp-multi").replace("NAME", "grp_multi"))
    info = site / "grp_multi_dist-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: grp-multi-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[mcp_providers]\ngrp_a = grp_multi\ngrp_b = grp_multi:hang\ngrp_c = grp_multi:boom\n"
    )
    composition = _compose(tmp_path, 'allow = ["grp_a", "grp_b", "grp_c", "policy"]\n[plugins.policy]\n')
    assert _record(composition, "grp_a").status == "loaded"  # type: ignore[attr-defined]
    assert "did not finish within 1 s" in (_record(composition, "grp_b").reason or "")  # type: ignore[attr-defined]
    assert "KeyboardInterrupt" in (_record(composition, "grp_c").reason or "")  # type: ignore[attr-defined]


def test_a_provider_plugin_made_for_another_core_is_left_out(site: Path, tmp_path: Path) -> None:
    _install(site, "grp_old", PROVIDER)
    meta = site / "grp_old_dist-0.1.dist-info" / "METADATA"
    meta.write_text(meta.read_text() + "Requires-Dist: mcp-providers<0.0.1\n")
    composition = _compose(tmp_path, 'allow = ["grp_old", "ssg_catalog"]\n')
    assert "made for another core" in (_record(composition, "grp_old").reason or "")  # type: ignore[attr-defined]
    assert composition.policy_failures == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("source", BROKEN_PROVIDERS.values(), ids=BROKEN_PROVIDERS.keys())
def test_a_policy_plugin_whose_import_fails_stops_serve(site: Path, tmp_path: Path, source: str) -> None:
    _install(site, "grp_gate", source.replace("grp_missing", "grp_gate_missing"), group=POLICY_GROUP)
    composition = _compose(tmp_path)
    lines = [line for line in composition.policy_failures if line.startswith("grp_gate:")]  # type: ignore[attr-defined]
    assert lines and f"declared in the {POLICY_GROUP} entry-point group" in lines[0], lines
    with pytest.raises(CompositionError):
        _ = composition.server  # type: ignore[attr-defined]


def test_a_policy_plugin_deselected_with_settings_stops_serve_without_being_imported(
    site: Path, tmp_path: Path
) -> None:
    _install(site, "grp_gate", BROKEN_PROVIDERS["import error"], group=POLICY_GROUP)
    composition = _compose(tmp_path, 'allow = ["ssg_catalog"]\n[plugins.grp_gate]\n')
    failures = composition.policy_failures  # type: ignore[attr-defined]
    assert any(line.startswith("grp_gate: policy plugin has [plugins.grp_gate]") for line in failures), failures
    assert "grp_gate" not in sys.modules


def test_a_working_policy_plugin_in_its_group_is_asked(site: Path, tmp_path: Path) -> None:
    _install(site, "grp_gate", DENY_ALL, group=POLICY_GROUP)
    composition = _compose(tmp_path, 'allow = ["grp_gate", "ssg_catalog"]\n')
    assert composition.policy_failures == []  # type: ignore[attr-defined]
    assert [i.plugin for i in composition.assembly.authorize] == ["grp_gate"]  # type: ignore[attr-defined]


def test_a_policy_group_plugin_without_authorize_is_refused_and_stops_serve(site: Path, tmp_path: Path) -> None:
    _install(site, "grp_gate", PROVIDER, group=POLICY_GROUP)
    composition = _compose(tmp_path)
    assert "pluggy registers no authorize hookimpl" in (_record(composition, "grp_gate").reason or "")  # type: ignore[attr-defined]
    assert any(line.startswith("grp_gate:") for line in composition.policy_failures)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "source",
    [
        DENY_ALL,
        DENY_ALL.replace("def authorize(", "def gate(").replace("@hookimpl", '@hookimpl(specname="authorize")'),
        PROVIDER + DENY_ALL.replace("def authorize(", "def _a(") + '\nsetattr(__import__("sys").modules[__name__], '
        '"z", hookimpl(specname="auth" + "orize")(_a))\n',
    ],
    ids=["authorize", "specname", "setattr"],
)
def test_a_provider_plugin_defining_authorize_is_refused_and_stops_serve(
    site: Path, tmp_path: Path, source: str
) -> None:
    _install(site, "grp_gate", source)
    composition = _compose(tmp_path)
    record = _record(composition, "grp_gate")
    assert record.status == "rejected" and POLICY_GROUP in (record.reason or ""), record.reason  # type: ignore[attr-defined]
    assert any(line.startswith("grp_gate:") for line in composition.policy_failures)  # type: ignore[attr-defined]
    assert "grp_gate" not in [i.plugin for i in composition.assembly.authorize]  # type: ignore[attr-defined]


def test_the_built_in_policy_is_declared_in_the_policy_group() -> None:
    import importlib.metadata

    assert {ep.name for ep in importlib.metadata.entry_points(group=POLICY_GROUP)} >= {"policy"}
    assert "policy" not in {ep.name for ep in importlib.metadata.entry_points(group=PROJECT)}


# -- item 20: one object under two entry-point names -------------------------------------------------


@pytest.mark.parametrize("group", [PROJECT, POLICY_GROUP])
def test_one_module_under_two_names_loads_once_and_names_both(site: Path, tmp_path: Path, group: str) -> None:
    source = PROVIDER + (DENY_ALL if group == POLICY_GROUP else "")
    _install(site, "grp_alias", source, group=group, names=("alias_a", "alias_b"))
    composition = _compose(tmp_path)
    assert _record(composition, "alias_a").status == "loaded"  # type: ignore[attr-defined]
    second = _record(composition, "alias_b")
    assert second.status == "rejected"  # type: ignore[attr-defined]
    assert "'alias_a' and 'alias_b' name one object" in (second.reason or ""), second.reason  # type: ignore[attr-defined]


@pytest.mark.parametrize("verb", ["plugins", "check", "serve"])
def test_one_module_under_two_names_is_one_line_not_a_traceback(site: Path, tmp_path: Path, verb: str) -> None:
    _install(site, "grp_alias", PROVIDER, names=("alias_a", "alias_b", "alias_c"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    env["MCP_PROVIDERS_PLUGINS"] = "alias_a,alias_b,alias_c,ssg_catalog"
    args = ["--json"] if verb == "plugins" else []
    run = subprocess.run(
        [*python(), "-m", "mcp_providers", verb, *args], env=env, capture_output=True, text=True, timeout=60, input=""
    )
    out = run.stdout + run.stderr
    assert "Traceback" not in out and "ValueError" not in out, out[-600:]
    assert "'alias_a' and 'alias_b' name one object" in out and "'alias_a' and 'alias_c' name one object" in out, out
    if verb == "serve":  # over stdio, with stdin closed: it started (the aliases left out) and ended
        assert run.returncode == 0, out[-600:]
