"""The per-instance HTTP client against the emulator: auth schemes, retries and error messages."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from servicenow_support import DEV_PASSWORD, DEV_USER, dev_instance

from mcp_providers.errors import SideEffectRefused, UpstreamError
from mcp_providers.http import read_scope
from mcp_providers.plugins.servicenow import register_resource_providers, register_tool_providers
from mcp_providers.plugins.servicenow.client import InstancePool
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.plugins.servicenow.errors import ServiceNowError
from mcp_providers.plugins.servicenow.settings import InstanceSettings, ServiceNowSettings

pytestmark = pytest.mark.anyio


def pool_for(*instances: dict[str, Any]) -> InstancePool:
    return InstancePool([InstanceSettings.model_validate(i) for i in instances])


async def test_api_key_is_sent_in_x_sn_apikey(monkeypatch):
    monkeypatch.setenv("SN_TEST_KEY", "the-api-key-value")
    with Emulator("lab", api_keys={"the-api-key-value": "lab-ci"}) as emu:
        pool = pool_for({"name": "lab", "url": emu.base_url, "auth": {"type": "api_key", "api_key_env": "SN_TEST_KEY"}})
        async with pool.opened():
            page = await pool.client("lab").list_records("problem", limit=2)
    assert len(page.records) == 2 and page.total == 4 and page.has_more
    assert [r.principal for r in emu.requests] == ["apikey:lab-ci"]


async def test_oauth_password_grant_refreshes_with_the_refresh_token_once(monkeypatch):
    monkeypatch.setenv("SN_TEST_CS", "client-secret-x")
    monkeypatch.setenv("SN_TEST_PW", "user-password-y")
    with Emulator("prod", users={"svc": "user-password-y"}, oauth_clients={"mcp": "client-secret-x"}) as emu:
        pool = pool_for({"name": "prod", "url": emu.base_url, "auth": {
            "type": "oauth", "grant_type": "password", "client_id": "mcp", "client_secret_env": "SN_TEST_CS",
            "username": "svc", "password_env": "SN_TEST_PW"}})  # fmt: skip
        async with pool.opened():
            client = pool.client("prod")
            await client.list_records("incident", limit=1)
            emu.expire_tokens()
            page = await client.list_records("incident", limit=1)
    assert page.records
    log = [(r.path.rsplit("/", 1)[-1], r.query.get("grant_type"), r.principal, r.status) for r in emu.requests]
    assert log == [
        ("oauth_token.do", "password", "oauth:mcp/svc", 200),
        ("incident", None, "oauth:mcp/svc", 200),
        ("incident", None, "oauth:mcp/svc", 401),
        ("oauth_token.do", "refresh_token", "oauth:mcp/svc", 200),
        ("incident", None, "oauth:mcp/svc", 200),
    ]


async def test_oauth_refused_refresh_falls_back_to_the_configured_grant(monkeypatch):
    monkeypatch.setenv("SN_TEST_CS", "client-secret-x")
    monkeypatch.setenv("SN_TEST_PW", "user-password-y")
    with Emulator("prod", users={"svc": "user-password-y"}, oauth_clients={"mcp": "client-secret-x"}) as emu:
        pool = pool_for({"name": "prod", "url": emu.base_url, "auth": {
            "type": "oauth", "grant_type": "password", "client_id": "mcp", "client_secret_env": "SN_TEST_CS",
            "username": "svc", "password_env": "SN_TEST_PW"}})  # fmt: skip
        async with pool.opened():
            client = pool.client("prod")
            await client.list_records("incident", limit=1)
            emu.expire_tokens()
            emu.fail_next(status=401, scope="oauth")
            page = await client.list_records("incident", limit=1)
    assert page.records
    log = [(r.path.rsplit("/", 1)[-1], r.query.get("grant_type"), r.status) for r in emu.requests]
    assert log == [
        ("oauth_token.do", "password", 200),
        ("incident", None, 200),
        ("incident", None, 401),
        ("oauth_token.do", "refresh_token", 401),
        ("oauth_token.do", "password", 200),
        ("incident", None, 200),
    ]


async def test_oauth_refused_names_the_setting_not_the_secret(monkeypatch):
    monkeypatch.setenv("SN_TEST_CS", "wrong-client-secret")
    with Emulator("prod", oauth_clients={"mcp": "right-client-secret"}) as emu:
        pool = pool_for({"name": "prod", "url": emu.base_url, "auth": {
            "type": "oauth", "client_id": "mcp", "client_secret_env": "SN_TEST_CS"}})  # fmt: skip
        async with pool.opened():
            with pytest.raises(ServiceNowError) as caught:
                await pool.client("prod").list_records("incident")
    message = str(caught.value)
    assert message == (
        "instance 'prod': OAuth token request (client_credentials grant) to /oauth_token.do was refused with "
        "HTTP 401: access_denied access_denied; check auth.client_id and the secret(s) in SN_TEST_CS"
    )
    assert "wrong-client-secret" not in message + repr(caught.value.data)
    assert [r.path for r in emu.requests] == ["/oauth_token.do"]


async def test_429_retries_are_bounded(secrets_env):
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as emu:
        pool = pool_for(dev_instance(emu, max_retries=2))
        emu.fail_next(3, status=429, retry_after="0")
        async with pool.opened():
            with pytest.raises(ServiceNowError) as caught:
                await pool.client("dev").list_records("problem")
    assert caught.value.status == 429
    assert "failed with HTTP 429: Rate limit exceeded" in str(caught.value)
    assert "still rate-limited after 2 retries" in str(caught.value)
    assert [r.status for r in emu.requests] == [429, 429, 429]


async def test_retry_after_longer_than_allowed_fails_at_once(secrets_env):
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as emu:
        pool = pool_for(dev_instance(emu, max_retry_after_seconds=5))
        emu.fail_next(status=429, retry_after="120")
        async with pool.opened():
            with pytest.raises(ServiceNowError, match=r"wait 120 s \(Retry-After\).*max_retry_after_seconds = 5"):
                await pool.client("dev").list_records("problem")
    assert len(emu.requests) == 1


async def test_malformed_json_and_unreachable_instance_are_clear(secrets_env):
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as emu:
        pool = pool_for(dev_instance(emu))
        emu.fail_next(status=None, malformed=True)
        async with pool.opened():
            with pytest.raises(ServiceNowError, match=r"HTTP 200 with a body that is not valid JSON \(\d+ bytes\)"):
                await pool.client("dev").list_records("incident")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    pool = pool_for(dev_instance(emu, url=closed))
    async with pool.opened():
        with pytest.raises(ServiceNowError, match=f"could not reach {closed} \\(ConnectError\\)"):
            await pool.client("dev").list_records("incident")


async def test_missing_secret_names_the_variable_and_sends_nothing(monkeypatch):
    monkeypatch.delenv("SN_TEST_DEV_PASSWORD", raising=False)
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as emu:
        pool = pool_for(dev_instance(emu))
        async with pool.opened():
            with pytest.raises(UpstreamError) as caught:
                await pool.client("dev").list_records("incident")
    assert str(caught.value) == (
        "instance 'dev': environment variable SN_TEST_DEV_PASSWORD (from auth.password_env) is not set; "
        "export it before starting the server"
    )
    assert emu.requests == []


async def test_providers_share_one_client_per_instance_opened_only_while_running(secrets_env):
    dev = {
        "name": "dev",
        "url": "https://dev.example.com",
        "auth": {"type": "basic", "username": DEV_USER, "password_env": "SN_TEST_DEV_PASSWORD"},
    }
    settings = ServiceNowSettings.model_validate({"instances": [dev]})
    (resources,) = register_resource_providers(settings)
    (tools,) = register_tool_providers(settings)
    pool = settings.pool()
    with pytest.raises(ServiceNowError, match="has no open HTTP client"):
        pool.client("dev")
    async with resources.lifespan():
        first = pool.client("dev")
        async with tools.lifespan():
            assert pool.client("dev") is first
        assert pool.client("dev") is first  # still open: the resource provider is running
    with pytest.raises(ServiceNowError, match="has no open HTTP client"):
        pool.client("dev")


async def test_writes_are_refused_inside_a_read_only_scope(secrets_env):
    with Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as emu:
        pool = pool_for(dev_instance(emu))
        async with pool.opened():
            client = pool.client("dev")
            sys_id = emu.records("incident")[0]["sys_id"]
            # The core's read-only scope, as every resource read runs in it.
            with read_scope(f"servicenow://dev/incidents/{sys_id}"):
                assert (await client.get_record("incident", sys_id))["sys_id"] == sys_id
                with pytest.raises(SideEffectRefused, match=r"^side-effect-in-resource-read: a PATCH to"):
                    await client.update_record("incident", sys_id, {"priority": "1"})
            assert (await client.update_record("incident", sys_id, {"priority": "5"}))["priority"]["value"] == "5"
    assert [r.method for r in emu.requests] == ["GET", "PATCH"]
