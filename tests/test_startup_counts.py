"""Work ``serve`` does before its first answer, counted (never timed; issue 43): what discovery
reads of each installed distribution's metadata and builds per plugin, what the built-ins start
with nothing configured, and how much of the start-up heap the cyclic collector walks."""

from __future__ import annotations

import collections
import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_providers._host.groups import entry_points
from mcp_providers._metadata import forget_installed


def _distributions(where: Path, count: int) -> list[str]:
    """``count`` plugin distributions (a module and a ``.dist-info`` each), as the start-up benchmark makes them."""
    names = []
    for i in range(count):
        module = f"counted_plugin_{i:02d}"
        info = where / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: counted-plugin-{i:02d}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[mcp_providers]\ncounted_{i:02d} = {module}\n")
        (where / f"{module}.py").write_text("")
        names.append(info.name)
    return names


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[collections.Counter[tuple[str, str]]]:
    """Each metadata file read from a distribution under ``tmp_path``: (dist-info folder, file) -> times."""
    counted: collections.Counter[tuple[str, str]] = collections.Counter()
    read_text = importlib.metadata.PathDistribution.read_text

    def counting(self: importlib.metadata.PathDistribution, filename: str) -> str | None:
        where = Path(str(self._path))  # type: ignore[attr-defined]
        if where.parent == tmp_path:
            counted[(where.name, filename)] += 1
        return read_text(self, filename)

    monkeypatch.setattr(importlib.metadata.PathDistribution, "read_text", counting)
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_installed()
    yield counted
    forget_installed()


def test_both_groups_are_read_in_one_pass_over_the_distributions(
    tmp_path: Path, reads: collections.Counter[tuple[str, str]]
) -> None:
    infos = _distributions(tmp_path, 5)
    found = {ep.name for ep in entry_points()}
    assert {f"counted_{i:02d}" for i in range(5)} <= found
    assert {info: reads[(info, "entry_points.txt")] for info in infos} == dict.fromkeys(infos, 1)


def test_no_configured_upstream_starts_no_listing_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The upstream plugin lists its servers in a thread with an event loop of its own; with none
    configured (every ``serve`` without ``[plugins.upstream]``) it starts neither."""
    from mcp_providers.plugins.upstream import built, listing
    from mcp_providers.plugins.upstream.settings import UpstreamSettings

    started: list[object] = []
    monkeypatch.setattr(listing.threading, "Thread", lambda *a, **k: started.append(k) or pytest.fail("a thread"))
    assert listing.list_at_start([]) == {}
    made = built.providers_of(UpstreamSettings())
    assert (made.resources, made.tools, made.prompts) == ((), (), ())
    assert started == []


def test_a_plugins_own_manager_reads_the_hookspecs_module_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plugin gets a plugin manager of its own with the hookspecs added; what each name of
    :mod:`mcp_providers.hookspecs` is (a hookspec or not) is worked out for the first only."""
    from mcp_providers import hookspecs
    from mcp_providers._host import hookscan
    from mcp_providers._host.hookcalls import plugin_manager

    first = plugin_manager()
    looked: list[str] = []
    unmarked = hookscan._unmarked

    def counting(namespace: object, name: str, marker: str) -> bool:
        looked.append(name)
        return unmarked(namespace, name, marker)

    monkeypatch.setattr(hookscan, "_unmarked", counting)
    second = plugin_manager()
    assert looked == []
    specs = {name for name in dir(hookspecs) if getattr(getattr(hookspecs, name), "mcp_providers_spec", None)}
    assert len(specs) >= 6
    for pm in (first, second):
        assert {name for name in specs if getattr(pm.hook, name).spec is not None} == specs


def test_scanning_a_plugin_for_authorize_makes_no_plugin_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`scan_authorize` runs once per plugin; the manager it asks is made once per process."""
    import types

    import pluggy

    from mcp_providers._host.hookscan import scan_authorize

    made: list[object] = []
    init = pluggy.PluginManager.__init__

    def counting(self: pluggy.PluginManager, project_name: str) -> None:
        made.append(self)
        init(self, project_name)

    monkeypatch.setattr(pluggy.PluginManager, "__init__", counting)
    module = types.ModuleType("scanned_plugin")
    module.authorize = pluggy.HookimplMarker("mcp_providers")(lambda subject, action, target, settings: None)
    assert scan_authorize(module).registered == ("authorize",)
    assert scan_authorize(types.ModuleType("plain_plugin")).registered == ()
    assert made == []


START_UP_COLLECTIONS = """
import gc, json, sys, time
passes = []
def count(phase, info):
    if phase == "start":
        walked = sum(len(gc.get_objects(g)) for g in range(info["generation"] + 1))  # a pass walks the younger too
        passes.append({"generation": info["generation"], "tracked": walked})
gc.callbacks.append(count)
import mcp_providers  # a library import: the collector runs as the host has it (not counted below)
del passes[:]
import mcp_providers.cli as cli
after_import = list(passes)
cli._started(cli._load(None), None, None, False, None)
print(json.dumps({"import": after_import, "start": passes[len(after_import):], "enabled": gc.isenabled(),
                  "frozen": gc.get_freeze_count()}))
"""


def test_serve_start_up_walks_none_of_the_heap_it_made_with_the_collector_paused(tmp_path: Path) -> None:
    """The CLI's import and ``serve``'s composition run with the cyclic collector paused
    (``mcp_providers._gc``); re-enabling it must not hand the next young pass everything made
    meanwhile (some 200,000 objects: the SDK's, the core's, the plugins'), nor leave them for the
    older passes to walk before ``serve`` freezes them. Every pass the start-up runs walks a few
    thousand objects at most."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    done = subprocess.run([sys.executable, "-c", START_UP_COLLECTIONS], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120, check=True)  # fmt: skip
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["enabled"] is True and seen["frozen"] > 100_000
    walked = [p["tracked"] for p in seen["import"] + seen["start"]]
    assert max(walked, default=0) < 5_000, (seen["import"], seen["start"])


PROMOTED = """
import gc, json
from mcp_providers import _gc
kept = [[i] for i in range(5_000)]
if %r:
    gc.freeze()  # the host's own frozen objects (a pre-forking server's, say)
host_frozen = gc.get_freeze_count()
with _gc.paused(promote=True):
    made = [[i] for i in range(50_000)]
print(json.dumps({"host_frozen": host_frozen, "frozen": gc.get_freeze_count(), "young": len(gc.get_objects(0)),
                  "middle": len(gc.get_objects(1)), "enabled": gc.isenabled()}))
"""


@pytest.mark.parametrize("host_froze", [False, True])
def test_a_promoting_pause_leaves_the_young_generation_empty_and_a_hosts_frozen_objects_frozen(
    host_froze: bool,
) -> None:
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PROMOTED % host_froze], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    seen = json.loads(done.stdout)
    assert seen["enabled"] is True
    if host_froze:  # nothing of the host's is handed back to the collector; the pause ends as a plain one
        assert seen["host_frozen"] > 5_000 and seen["frozen"] == seen["host_frozen"]
        assert seen["young"] + seen["middle"] > 50_000
    else:
        assert seen["frozen"] == 0
        assert seen["young"] + seen["middle"] < 1_000


def test_the_request_state_codec_is_made_at_the_first_state_not_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deriving the ``requestState`` key (HKDF, the process's first use of OpenSSL) waits for the
    first tool call that asks for input; a key too short is still refused at start-up."""
    from mcp.server import request_state as sdk_request_state

    from mcp_providers._serve.steps import request_state
    from mcp_providers.errors import ConfigError
    from mcp_providers.identity import Principal

    made: list[object] = []
    codec = sdk_request_state.AESGCMRequestStateCodec

    def counting(keys: list[bytes]) -> object:
        made.append(keys)
        return codec(keys)

    monkeypatch.setattr(request_state, "AESGCMRequestStateCodec", counting)
    states = request_state.RequestStates(b"k" * 32, 300)
    assert made == []
    token = states.seal(Principal("alice"), "t", "args", {}, {})
    assert made == [[b"k" * 32]]
    assert states._codec.unseal(token)
    assert len(made) == 1  # made once, then kept
    monkeypatch.setenv("SHORT_STATE_KEY", "too-short")
    with pytest.raises(ConfigError, match="SHORT_STATE_KEY"):
        request_state.state_key("SHORT_STATE_KEY")


def test_typer_reads_the_commands_annotations_as_objects_without_evaluating_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """typer rebuilds every command from its signature at each run; annotations kept as text
    (``from __future__ import annotations``) had it evaluate some 220 strings before ``serve`` began."""
    import builtins

    import typer

    import mcp_providers.cli as cli

    callbacks = [c.callback for c in cli.app.registered_commands]
    assert len(callbacks) >= 5 and all(callbacks)
    texts = [(f.__name__, k) for f in callbacks for k, v in f.__annotations__.items() if isinstance(v, str)]  # type: ignore[union-attr]
    assert texts == []
    evaluated: list[object] = []
    real_eval = builtins.eval
    monkeypatch.setattr(builtins, "eval", lambda *a, **k: evaluated.append(a[0]) or real_eval(*a, **k))
    typer.main.get_command(cli.app)
    assert evaluated == []
