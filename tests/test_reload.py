"""Live composition in process: a reload swaps the assembly in one step, tells clients of both eras,
finishes in-flight requests on the old one, and changes nothing when it fails (issue 26)."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from reload_support import EXTRA_URI, LIVE_URI, NOTES_URI, plugin_module

from mcp_providers._serve.composition import Composition, compose
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import Config, ServerSettings
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio


class Setup:
    """A composition of the reload plugins passed directly, and a reloader reading ``self.config``."""

    def __init__(self, config: Config) -> None:
        self.module: Any = plugin_module()
        self.plugins = {"notes": self.module.notes, "extra": self.module.extra, "gatekeeper": self.module.policy}
        self.config = config
        self.composition: Composition = compose(config, load_entrypoints=False, plugins=self.plugins)
        self.reloader = Reloader(self.composition, self._load, load_entrypoints=False, plugins=self.plugins)

    def _load(self) -> Config:
        if isinstance(self.config, Exception):
            raise self.config
        return self.config

    async def reload(self, config: Config | Exception) -> Any:
        self.config = config  # type: ignore[assignment]
        return await self.reloader.reload()


def _text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


async def _until(condition: Any, seconds: float = 5.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.01)


async def test_enabling_a_plugin_tells_both_eras_and_serves_it() -> None:
    setup = Setup(Config(deny=("extra",)))
    legacy_lists: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            legacy_lists.append("resources")

    async with (
        Client(setup.composition.server, mode="legacy", cache=None, message_handler=on_message) as legacy,
        connect(setup.composition) as modern,
        modern.listen(resources_list_changed=True, tools_list_changed=True) as stream,
    ):
        caps = legacy.server_capabilities
        assert caps.resources is not None and caps.resources.list_changed is True
        assert caps.tools is None  # nothing serves tools yet
        assert [r.uri for r in (await legacy.list_resources()).resources] == [NOTES_URI]
        attempt = await setup.reload(Config())
        assert (attempt.outcome, attempt.changed, attempt.generation) == ("applied", ("resources", "tools"), 2)
        seen = set()
        with anyio.fail_after(5):
            async for event in stream:
                seen.add(type(event).__name__)
                if len(seen) == 2:
                    break
        assert seen == {"ResourcesListChanged", "ToolsListChanged"}
        await _until(lambda: legacy_lists == ["resources"])
        for client in (legacy, modern):
            assert EXTRA_URI in [r.uri for r in (await client.list_resources()).resources]
            assert _text(await client.read_resource(EXTRA_URI)) == "in the box"
        assert (await modern.call_tool("echo", {"value": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
        attempt = await setup.reload(Config(deny=("extra",)))
        assert attempt.changed == ("resources", "tools")
        await _until(lambda: legacy_lists == ["resources", "resources"])
        for client in (legacy, modern):
            with pytest.raises(MCPError) as gone:
                await client.read_resource(EXTRA_URI)
            assert gone.value.code == types.INVALID_PARAMS and "Unknown resource" in gone.value.message
            with pytest.raises(MCPError) as no_tools:
                await client.call_tool("echo", {"value": "hi"})
            assert no_tools.value.code == types.METHOD_NOT_FOUND


async def test_a_read_in_flight_finishes_on_the_old_provider_whose_lifespan_then_ends() -> None:
    setup = Setup(Config(plugins={"notes": {"text": "first"}}))
    stats, hold = setup.module.STATS, setup.module.HOLD
    results: list[str] = []
    async with connect(setup.composition) as client:
        assert stats == {"entered": 1, "exited": 0}
        held, release = anyio.Event(), anyio.Event()
        hold.update(held=held, release=release)

        async def read() -> None:
            results.append(_text(await client.read_resource(NOTES_URI)))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            with anyio.fail_after(5):
                await held.wait()
            hold.clear()  # the read waiting keeps its event; later reads do not wait
            attempt = await setup.reload(Config(plugins={"notes": {"text": "second"}}))
            assert attempt.outcome == "applied" and attempt.changed == ()  # same list, new settings
            assert stats == {"entered": 2, "exited": 0}  # the new provider started; the old one is still reading
            assert _text(await client.read_resource(NOTES_URI)) == "second"
            await anyio.wait_all_tasks_blocked()  # the old generation's retirement ran, and must be waiting
            assert not results and stats["exited"] == 0  # its provider still serves the read in flight
            release.set()
        assert results == ["first"]  # finished on the provider it started on
        await _until(lambda: stats["exited"] == 1)  # the old provider's lifespan ended after its last read
    assert stats == {"entered": 2, "exited": 2}


# -- a reload that fails changes nothing -------------------------------------------------------------

BASE = """
allow = ["notes", "extra", "gatekeeper"{more}]
deny = ["extra"]
{tail}
"""

BROKEN_MODULE = "raise ImportError('the broken plugin cannot be imported')\n"
CLASH_MODULE = """
from mcp_providers import Content, Resource, ResourceProvider, hookimpl


class Squatter(ResourceProvider):
    name = "squatter"
    prefixes = ("notes://board/",)

    def resources(self):
        return [Resource(uri="notes://board/today", name="today")]

    async def read(self, request):
        return Content(text="not yours")


@hookimpl
def register_resource_providers():
    return [Squatter()]
"""


def _bad_site(root: Any, tag: str) -> Any:
    """Installed distributions that each break a reload in their own way (modules named per test)."""
    from reload_support import install

    root.mkdir(parents=True)
    (root / f"broken_{tag}.py").write_text(BROKEN_MODULE)
    (root / f"clash_{tag}.py").write_text(CLASH_MODULE)
    install(root, "broken-dist", {"broken": f"broken_{tag}"})
    install(root, "clash-dist", {"clash": f"clash_{tag}"})
    install(root, "half-dist", {"halfway": f"never_written_{tag}:plugin"})  # its module never landed
    return root


BAD_INPUTS: dict[str, tuple[str, str]] = {
    "config does not parse": ("allow = [notes", "could not be read"),
    "plugin fails to import": (BASE.format(more=', "broken"', tail=""), "broken: rejected: import failed"),
    "new collision": (BASE.format(more=', "clash"', tail=""), "notes://board/"),
    "policy plugin rejected": (
        BASE.format(more="", tail="[plugins.gatekeeper]\ndeny = 5\n"),
        "refusing to serve without its authorization policy: gatekeeper",
    ),
    "half-installed distribution": (BASE.format(more=', "halfway"', tail=""), "halfway: rejected: import failed"),
    "plugin no longer installed": (BASE.format(more=', "gone"', tail=""), "not installed: gone"),
    "setting read at start-up only": (BASE.format(more="", tail="[server]\nread_timeout = 5\n"), "read_timeout"),
    # round 4 item 24: a changed [cluster] accepted on reload survived the mutation run
    "cluster added": (
        BASE.format(more="", tail='[cluster]\nredis_url = "redis://127.0.0.1:9/0"\nkey_prefix = "r4"\n'),
        "[cluster] changed",
    ),
}


@pytest.fixture
def served(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Any:
    from mcp_providers.config import load_config

    tag = request.node.callspec.id.replace(" ", "_").replace("-", "_") if hasattr(request.node, "callspec") else "x"
    monkeypatch.syspath_prepend(str(_bad_site(tmp_path / "site", tag)))
    module = plugin_module()
    plugins = {"notes": module.notes, "extra": module.extra, "gatekeeper": module.policy}
    path = tmp_path / "mcp-providers.toml"
    path.write_text(BASE.format(more="", tail=""))
    composition = compose(load_config(path), plugins=plugins)
    reloader = Reloader(composition, lambda: load_config(path), plugins=plugins)
    return composition, reloader, path


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
async def test_a_bad_reload_keeps_the_old_composition_and_says_why(
    served: Any, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    from starlette.requests import Request

    from mcp_providers._serve.transport.ops import DETAILS, ops_routes

    composition, reloader, path = served
    text, expected = BAD_INPUTS[case]
    routes = {r.path: r.endpoint for r in ops_routes(composition, reloader)}
    async with composition.running(), connect(composition) as client:
        path.write_text(text)
        with caplog.at_level(logging.ERROR, logger="mcp_providers.reload"):
            attempt = await reloader.reload("SIGHUP")
        assert attempt.outcome == "failed", attempt
        assert any(expected in line for line in attempt.problems), attempt.problems
        assert any(expected in r.getMessage() for r in caplog.records)  # the log says it too
        assert composition.runtime.generation.number == 1
        assert _text(await client.read_resource(NOTES_URI)) == "first"  # the old composition serves
        assert [r.uri for r in (await client.list_resources()).resources] == [NOTES_URI]
        ready = await routes["/readyz"](Request({"type": "http", "method": "GET", "path": "/readyz", "headers": []}))
        body = __import__("json").loads(ready.body)
        assert ready.status_code == 200 and body["status"] == "ready"  # still ready: the old one serves
        assert body["last_reload"]["outcome"] == "failed" and body["generation"] == 1
        # round 4 item 3: /readyz (no token) counts the problems and quotes none: a problem may hold
        # a plugin's exception text or a config value; the log and /status.json have them
        assert body["last_reload"]["problem_count"] == len(attempt.problems) >= 1
        count = len(attempt.problems)
        assert body["last_reload"]["problems"] == [f"{count} problem{'s' * (count > 1)}; {DETAILS}"]
        assert not any(line in ready.body.decode() or expected in ready.body.decode() for line in attempt.problems)
        page = await routes["/metrics"](Request({"type": "http", "method": "GET", "path": "/metrics", "headers": []}))
        metrics = page.body.decode()
        assert 'mcp_providers_reload_total{outcome="failed"} 1.0' in metrics
        assert f'mcp_providers_config_info{{digest="{reloader.digest}"}} 1.0' in metrics
        path.write_text(BASE.format(more="", tail="").replace('deny = ["extra"]', "deny = []"))
        fixed = await reloader.reload("SIGHUP")  # once fixed, the next reload applies
        assert fixed.outcome == "applied" and fixed.generation == 2
        assert _text(await client.read_resource(EXTRA_URI)) == "in the box"


# -- policy by reload ----------------------------------------------------------------------------------

SECRET = "notes://board/today"


async def test_a_policy_changed_by_reload_applies_at_once_and_never_lapses() -> None:
    """Reads of a URI every config denies are hammered through 20 reloads that alternate the other
    rules: none is ever served (no window without a policy), and after each reload the rule it
    changed decides the very next read."""
    always, flip = SECRET, EXTRA_URI
    configs = [
        Config(plugins={"gatekeeper": {"deny": [always, flip]}}),
        Config(plugins={"gatekeeper": {"deny": [always]}}),
    ]
    setup = Setup(configs[0])
    served_denied = 0
    refused = 0
    stop = anyio.Event()

    async with connect(setup.composition) as client:

        async def hammer() -> None:
            nonlocal served_denied, refused
            while not stop.is_set():
                try:
                    await client.read_resource(always)
                    served_denied += 1
                except MCPError as exc:
                    assert exc.code == -32003, exc  # denied, never another failure
                    refused += 1

        async with anyio.create_task_group() as tasks:
            for _ in range(4):
                tasks.start_soon(hammer)
            for i in range(20):
                attempt = await setup.reload(configs[(i + 1) % 2])
                assert attempt.outcome == "applied", attempt
                if (i + 1) % 2:  # flip is allowed now
                    assert _text(await client.read_resource(flip)) == "in the box"
                else:
                    with pytest.raises(MCPError) as denied:
                        await client.read_resource(flip)
                    assert denied.value.code == -32003
            stop.set()
    assert setup.composition.runtime.generation.number == 21
    assert served_denied == 0 and refused > 20, (served_denied, refused)


async def test_a_policy_changed_by_reload_tells_clients_their_lists_may_have_changed() -> None:
    """Tester fourteen: a reload changing only the policy said ``changed: []`` and sent no
    list_changed, though what each caller may list had changed. A changed policy (its rules, or
    which plugins answer ``authorize``) now counts every served list as changed."""
    setup = Setup(Config(plugins={"gatekeeper": {"deny": [SECRET, EXTRA_URI]}}))
    async with connect(setup.composition) as client, client.listen(resources_list_changed=True) as stream:
        attempt = await setup.reload(Config(plugins={"gatekeeper": {"deny": [SECRET]}}))
        assert attempt.outcome == "applied" and "resources" in attempt.changed, attempt
        with anyio.fail_after(5):
            async for event in stream:
                assert type(event).__name__ == "ResourcesListChanged"
                break
        same = await setup.reload(Config(plugins={"gatekeeper": {"deny": [SECRET]}}))
        assert same.outcome == "unchanged" and same.changed == ()


# -- fifty reloads leak nothing ------------------------------------------------------------------------


def _fds() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


async def test_fifty_reloads_leave_rss_descriptors_and_tasks_within_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio
    import gc

    setup = Setup(Config(deny=("extra",)))
    configs = [Config(), Config(deny=("extra",), plugins={"notes": {"text": "other"}}), Config(deny=("extra",))]
    async with connect(setup.composition) as client, client.listen(resources_list_changed=True):
        await setup.reload(configs[0])  # warm: every code path once
        await setup.reload(configs[2])
        await client.read_resource(NOTES_URI)
        gc.collect()
        before = (_rss_kib(), _fds(), len(asyncio.all_tasks()))
        for i in range(50):
            assert (await setup.reload(configs[i % 3])).outcome == "applied"
            await client.read_resource(NOTES_URI)
        await _until(lambda: setup.module.STATS["entered"] - setup.module.STATS["exited"] == 1)
        await anyio.sleep(0.05)  # the retired generations' tasks end
        gc.collect()
        after = (_rss_kib(), _fds(), len(asyncio.all_tasks()))
        hosted = set(setup.composition.runtime._hosted)  # only the served providers' lifespans run
        assert hosted == {id(d.provider) for d in setup.composition.declared}
    with capsys.disabled():
        print(f"\n50 reloads: RSS {before[0]} -> {after[0]} KiB, fds {before[1]} -> {after[1]}, "
              f"tasks {before[2]} -> {after[2]}")  # fmt: skip
    assert after[2] <= before[2], "tasks left behind"
    assert after[1] <= before[1] + 2, "file descriptors left open"
    assert after[0] - before[0] < 20 * 1024, "RSS grew by more than 20 MiB"


async def test_a_cursor_of_a_list_that_changed_is_refused_and_one_of_an_unchanged_list_goes_on() -> None:
    setup = Setup(Config(deny=("extra",), server=ServerSettings(page_size=1)))
    async with connect(setup.composition) as client:
        await setup.reload(Config(server=ServerSettings(page_size=1)))
        first = await client.list_resources()
        assert first.next_cursor is not None
        attempt = await setup.reload(Config(server=ServerSettings(page_size=3)))  # same list, new page size
        assert attempt.outcome == "applied" and attempt.changed == ()
        rest = await client.list_resources(cursor=first.next_cursor)
        assert sorted(r.uri for r in first.resources + rest.resources) == sorted([EXTRA_URI, LIVE_URI, NOTES_URI])
        again = await client.list_resources()
        assert again.next_cursor is None
        await setup.reload(Config(server=ServerSettings(page_size=1)))
        stale = (await client.list_resources()).next_cursor
        await setup.reload(Config(deny=("extra",), server=ServerSettings(page_size=1)))  # the list changed
        with pytest.raises(MCPError) as refused:
            await client.list_resources(cursor=stale)
        assert refused.value.code == types.INVALID_PARAMS
        assert (
            "the list changed since" in refused.value.message and "list again without a cursor" in refused.value.message
        )


# -- who may reload over HTTP ----------------------------------------------------------------------------


async def test_admin_reload_needs_a_token_or_a_subject_the_config_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from starlette.requests import Request

    from mcp_providers._serve.transport.admin import AdminGate, admin_routes
    from mcp_providers._serve.transport.auth import http_auth
    from mcp_providers.config import AdminSettings, AuthConfig, TokenConfig
    from mcp_providers.errors import ConfigError

    for name, letter in (("ADMIN_T", "a"), ("OPS_T", "o"), ("BOB_T", "b")):
        monkeypatch.setenv(name, letter * 40)
    auth = http_auth(AuthConfig(tokens=(TokenConfig(subject="ops-admin", token_env="OPS_T"),
                                        TokenConfig(subject="bob", token_env="BOB_T"))))  # fmt: skip
    setup = Setup(Config(deny=("extra",)))
    admin = AdminSettings(token_env="ADMIN_T", subjects=("ops-admin",))
    endpoint = admin_routes(setup.reloader, admin, auth)[0].endpoint

    async def post(token: str | None) -> Any:
        headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
        scope = {"type": "http", "method": "POST", "path": "/admin/reload", "headers": headers, "query_string": b""}
        return await endpoint(Request(scope))

    assert (await post(None)).status_code == 401
    assert (await post("b" * 40)).status_code == 403  # bob's token is good on the MCP path, not here
    assert (await post("x" * 40)).status_code == 403
    assert setup.reloader.last is None  # refused requests reload nothing
    answer = await post("a" * 40)
    assert answer.status_code == 200 and json.loads(answer.body)["outcome"] == "unchanged"
    setup.config = Config()
    answer = await post("o" * 40)  # ops-admin, by subject
    assert answer.status_code == 200 and json.loads(answer.body)["outcome"] == "applied"
    setup.config = Config(server=ServerSettings(read_timeout=1))
    answer = await post("a" * 40)
    assert answer.status_code == 422 and "read_timeout" in json.loads(answer.body)["problems"][0]
    off = admin_routes(setup.reloader, None, auth)[0].endpoint
    scope = {"type": "http", "method": "POST", "path": "/admin/reload", "headers": [], "query_string": b""}
    assert (await off(Request(scope))).status_code == 404
    monkeypatch.setenv("ADMIN_T", "short")
    with pytest.raises(ConfigError, match="at least 32 characters"):
        AdminGate(admin, auth)
    with pytest.raises(ConfigError, match=r"need \[server.auth\]"):
        AdminGate(AdminSettings(subjects=("ops-admin",)), None)


async def test_an_upgraded_distribution_is_reported_and_its_imported_code_keeps_serving(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reload_support import install

    from mcp_providers.config import load_config

    root = tmp_path / "site"
    root.mkdir()
    (root / "upgraded_plugin.py").write_text(CLASH_MODULE.replace("notes://board/", "up://grade/"))
    info = install(root, "upgraded-dist", {"upgraded": "upgraded_plugin"}, "1.0")
    monkeypatch.syspath_prepend(str(root))
    path = tmp_path / "mcp-providers.toml"
    path.write_text('allow = ["upgraded"]\n')
    composition = compose(load_config(path))
    reloader = Reloader(composition, lambda: load_config(path))
    before = [id(d.provider) for d in composition.declared]
    newer = info.with_name("upgraded_dist-2.0.dist-info")
    info.rename(newer)
    (newer / "METADATA").write_text("Metadata-Version: 2.1\nName: upgraded-dist\nVersion: 2.0\n")
    attempt = await reloader.reload()
    assert attempt.outcome == "unchanged"  # the same imported code and settings: nothing to swap
    assert attempt.warnings == (
        "upgraded: distribution upgraded-dist is now 2.0 on disk, but 1.0's code was imported and keeps "
        "serving; restart to load 2.0",
    )
    assert [id(d.provider) for d in composition.declared] == before


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # resources/subscribe, 2025
async def test_watches_of_surviving_uris_go_on_and_those_of_vanished_ones_end_with_a_notice() -> None:
    setup = Setup(Config())
    updated: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))

    def box() -> Any:
        return next(d.provider for d in setup.composition.declared if d.provider.name == "box")

    hub = setup.composition.runtime.hub
    async with (
        Client(setup.composition.server, mode="legacy", cache=None, message_handler=on_message) as legacy,
        connect(setup.composition) as modern,
        modern.listen(resource_subscriptions=[LIVE_URI]) as stream,
    ):
        await legacy.subscribe_resource(LIVE_URI)
        assert hub.watch_count() == 2
        attempt = await setup.reload(Config(plugins={"notes": {"text": "other"}}))  # the box survives
        assert attempt.outcome == "applied"
        await box().publisher.resource_updated(LIVE_URI)
        await _until(lambda: updated == [LIVE_URI])
        with anyio.fail_after(5):
            async for event in stream:
                assert event.uri == LIVE_URI  # type: ignore[union-attr]
                break
        assert hub.watch_count() == 2
        await setup.reload(Config(deny=("extra",)))  # the box and its live resource are gone
        await _until(lambda: updated == [LIVE_URI, LIVE_URI])  # the last notice: a re-read says it is gone
        with anyio.fail_after(5):
            async for _ in stream:  # the listen stream is closed gracefully: the loop just ends
                pytest.fail("no event is delivered for a URI that is no longer served")
        await _until(lambda: hub.watch_count() == 0)
        with pytest.raises(MCPError) as gone:
            await legacy.read_resource(LIVE_URI)
        assert "Unknown resource" in gone.value.message


async def test_reloading_the_unchanged_embedded_default_keeps_every_provider() -> None:
    """The built-in plugins, ServiceNow's settings with their private client pool included: an
    unchanged config swaps nothing and restarts no lifespan."""
    from mcp_providers.config import load_config

    composition = compose(load_config(None))
    reloader = Reloader(composition, lambda: load_config(None))
    before = [id(d.provider) for d in composition.declared]
    assert len(before) >= 6
    attempt = await reloader.reload()
    assert (attempt.outcome, attempt.generation) == ("unchanged", 1), attempt
    assert [id(d.provider) for d in composition.declared] == before


async def test_a_reload_gives_the_start_up_heap_back_to_the_collector() -> None:
    """serve freezes what start-up made (mcp_providers._gc); frozen objects are never collected, so
    the first reload unfreezes them and the assembly it replaces can be collected."""
    import gc

    setup = Setup(Config(deny=("extra",)))
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        assert (await setup.reload(Config())).outcome == "applied"
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
