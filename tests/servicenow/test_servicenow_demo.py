"""The plugin's demo_settings hook: emulated dev and prod instances read through a composed server."""

from __future__ import annotations

import json
import os

import pytest

import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers.plugins.servicenow.emulator import DEMO_ENV
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


async def test_demo_settings_serve_both_instances_and_hold_no_secret():
    with servicenow_plugin.demo_settings() as table:
        secrets = [os.environ[name] for name in DEMO_ENV.values()]
        assert not any(secret in json.dumps(table) for secret in secrets)
        composition = compose({"servicenow": servicenow_plugin}, {"servicenow": table})
        async with connect(composition) as client:
            for instance in ("dev", "prod"):
                body = json.loads((await client.read_resource(f"servicenow://{instance}/incidents")).contents[0].text)
                assert body["metadata"]["instance"] == instance
                assert body["data"][0]["short_description"].startswith(f"[{instance}]")
    assert all(name not in os.environ for name in DEMO_ENV.values())
