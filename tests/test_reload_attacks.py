"""Live reload under attack, in process: what a reload does with providers whose ``lifespan``
fails or hangs on the way in, and a provider repaired by a reload (issue 26)."""

from __future__ import annotations

import textwrap
import threading
import types as pytypes
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from mcp_providers import hookimpl
from mcp_providers._serve import reload as reload_module
from mcp_providers._serve import runtime as runtime_module
from mcp_providers._serve.composition import Composition, compose
from mcp_providers._serve.reload import Reloader
from mcp_providers.config import Config
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio

FRAGILE_URI = "fragile://shelf/one"

MODULE = """
from __future__ import annotations

import contextlib

import anyio
from pydantic import BaseModel

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl


class FragileSettings(BaseModel):
    start: str = "fail"  # "fail" raises on the way in, "hang" never finishes starting, "ok" starts
    text: str = "whole"


class Fragile(ResourceProvider):
    name = "fragile"
    prefixes = ("fragile://shelf/",)

    def __init__(self, settings: FragileSettings) -> None:
        self.settings = settings

    def resources(self):
        return [Resource(uri="fragile://shelf/one", name="one", mime_type="text/plain")]

    @contextlib.asynccontextmanager
    async def lifespan(self):
        if self.settings.start == "fail":
            raise RuntimeError("the upstream refused the login")
        if self.settings.start == "hang":
            await anyio.sleep_forever()
        yield

    async def read(self, request: ReadRequest) -> Content:
        return Content(text=self.settings.text)


class fragile:
    @hookimpl
    def settings_model(self):
        return FragileSettings

    @hookimpl
    def register_resource_providers(self, settings):
        return [Fragile(settings)]


fragile = fragile()
"""


class Setup:
    """A composition of the ``fragile`` plugin passed directly, and a reloader reading ``self.config``."""

    def __init__(self, config: Config) -> None:
        module: Any = pytypes.ModuleType("reload_attack_plugins")
        exec(compile(textwrap.dedent(MODULE), "reload_attack_plugins", "exec"), module.__dict__)
        self.plugins = {"fragile": module.fragile}
        self.config = config
        self.composition: Composition = compose(config, load_entrypoints=False, plugins=self.plugins)
        self.reloader = Reloader(self.composition, lambda: self.config, load_entrypoints=False, plugins=self.plugins)

    async def reload(self, config: Config) -> Any:
        self.config = config
        return await self.reloader.reload()


def _text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


async def test_a_provider_that_failed_to_start_serves_once_a_reload_gives_it_settings_that_start() -> None:
    setup = Setup(Config(plugins={"fragile": {"start": "fail"}}))
    async with connect(setup.composition) as client:
        with pytest.raises(MCPError) as broken:
            await client.read_resource(FRAGILE_URI)
        assert "failed to start" in broken.value.message
        assert setup.composition.runtime.startup_failures.keys() == {"fragile"}
        attempt = await setup.reload(Config(plugins={"fragile": {"start": "ok", "text": "repaired"}}))
        assert attempt.outcome == "applied"
        assert setup.composition.runtime.startup_failures == {}  # /readyz's failed_providers
        assert _text(await client.read_resource(FRAGILE_URI)) == "repaired"


async def test_a_reload_whose_new_provider_fails_to_start_says_so() -> None:
    setup = Setup(Config(deny=("fragile",)))
    async with connect(setup.composition) as client:
        attempt = await setup.reload(Config(plugins={"fragile": {"start": "fail"}}))
        assert attempt.outcome == "applied"
        assert [w for w in attempt.warnings if "'fragile'" in w and "failed to start" in w], attempt.warnings
        assert "refused the login" not in str(attempt.as_dict())  # /readyz shows it: the plugin's words stay in the log
        with pytest.raises(MCPError):
            await client.read_resource(FRAGILE_URI)


async def test_a_provider_whose_lifespan_hangs_on_the_way_in_does_not_hold_the_reload(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(runtime_module, "START_SECONDS", 0.5)
    setup = Setup(Config(deny=("fragile",)))
    async with connect(setup.composition) as client:
        with anyio.fail_after(10):
            attempt = await setup.reload(Config(plugins={"fragile": {"start": "hang"}}))
        assert attempt.outcome == "applied"
        assert [w for w in attempt.warnings if "'fragile'" in w and "failed to start" in w], attempt.warnings
        assert "provider 'fragile' (plugin 'fragile') did not start within 0.5 s" in caplog.text
        with pytest.raises(MCPError) as hung:
            await client.read_resource(FRAGILE_URI)
        assert "failed to start" in hung.value.message
        with anyio.fail_after(10):  # the next reload is not queued behind the hung one
            attempt = await setup.reload(Config(plugins={"fragile": {"start": "ok"}}))
        assert attempt.outcome == "applied"
        assert _text(await client.read_resource(FRAGILE_URI)) == "whole"


async def test_reading_the_config_does_not_stall_requests() -> None:
    setup = Setup(Config(plugins={"fragile": {"start": "ok"}}))
    order: list[str] = []
    reading, slow_disk = threading.Event(), threading.Event()

    def load() -> Config:
        reading.set()
        slow_disk.wait(5)  # a config on a slow network disk
        order.append("config read")
        return Config(plugins={"fragile": {"start": "ok", "text": "reread"}})

    reloader = Reloader(setup.composition, load, load_entrypoints=False, plugins=setup.plugins)
    async with connect(setup.composition) as client, anyio.create_task_group() as tasks:
        tasks.start_soon(reloader.reload)
        assert await anyio.to_thread.run_sync(reading.wait, 5)
        assert _text(await client.read_resource(FRAGILE_URI)) == "whole"
        order.append("read served")
        slow_disk.set()
    assert order == ["read served", "config read"]
    assert reloader.last is not None and reloader.last.outcome == "applied"


async def test_an_admin_subject_named_by_another_trusted_issuer_may_not_reload() -> None:
    """A subject is unique only within its issuer: with two trusted issuers, ``ops-admin`` at the
    partner's identity provider is somebody else than ``ops-admin`` at the company's."""
    from identity_standin import standin_idp

    from mcp_providers._serve.transport.admin import AdminGate
    from mcp_providers._serve.transport.auth import http_auth
    from mcp_providers.config import AdminSettings, AuthConfig
    from mcp_providers.errors import ConfigError

    resource = "http://127.0.0.1:9/mcp"
    with standin_idp(path="/corp") as corp, standin_idp(path="/partner", key_slot=1) as partner:
        auth = http_auth(AuthConfig(mode="jwt", issuer=[corp.issuer, partner.issuer], resource_url=resource))
        with pytest.raises(ConfigError, match=r"\[server.admin\] subjects: \[server.auth\] trusts 2 issuers"):
            AdminGate(AdminSettings(subjects=("ops-admin",)), auth)
        gate = AdminGate(AdminSettings(subjects=("ops-admin",), issuers=(corp.issuer,)), auth)
        assert await gate.who(partner.sign(partner.claims(resource, sub="ops-admin"))) is None
        admin = await gate.who(corp.sign(corp.claims(resource, sub="ops-admin")))
        assert admin is not None and admin.key == (corp.issuer, "ops-admin")
        assert await gate.who(corp.sign(corp.claims(resource, sub="alice"))) is None
        alone = http_auth(AuthConfig(mode="jwt", issuer=corp.issuer, resource_url=resource))
        assert (
            await AdminGate(AdminSettings(subjects=("ops-admin",)), alone).who(
                corp.sign(corp.claims(resource, sub="ops-admin"))
            )
            is not None
        )  # one issuer: the subject alone names the admin


STUCK_HOOK = threading.Event()  # set by the test once done: the thread composing is let go


class _Sloth:
    """A plugin whose ``register_resource_providers`` hook never returns (until the test lets it)."""

    @hookimpl
    def register_resource_providers(self) -> list[Any]:
        STUCK_HOOK.wait(30)
        return []


async def test_a_plugin_hook_that_hangs_while_composing_fails_the_reload_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reload_module, "COMPOSE_SECONDS", 0.5)
    setup = Setup(Config(plugins={"fragile": {"start": "ok"}}))
    setup.plugins["sloth"] = _Sloth()
    setup.reloader = Reloader(setup.composition, lambda: setup.config, load_entrypoints=False, plugins=setup.plugins)
    try:
        async with connect(setup.composition) as client:
            with anyio.fail_after(10):
                attempt = await setup.reload(Config(plugins={"fragile": {"start": "ok"}}))
            assert attempt.outcome == "failed"
            assert attempt.problems == (
                "composing the new config took longer than 0.5 s: a plugin's import or hook did not return "
                "(it is left running in the background)",
            )
            assert _text(await client.read_resource(FRAGILE_URI)) == "whole"  # the old assembly serves
            with anyio.fail_after(10):  # not queued behind the stuck one
                attempt = await setup.reload(Config(deny=("sloth",), plugins={"fragile": {"start": "ok", "text": "b"}}))
            assert attempt.outcome == "applied"
            assert _text(await client.read_resource(FRAGILE_URI)) == "b"
    finally:
        STUCK_HOOK.set()


async def test_a_required_plugin_missing_is_one_problem_not_also_a_missing_policy() -> None:
    from mcp_providers.config import ServerSettings

    setup = Setup(Config(plugins={"fragile": {"start": "ok"}}))
    attempt = await setup.reload(Config(plugins={"fragile": {"start": "ok"}},
                                        server=ServerSettings(require_plugins=("ghost",))))  # fmt: skip
    assert attempt.outcome == "failed"
    assert attempt.problems == ("ghost: required by [server] require_plugins but not installed; installed: fragile",)
