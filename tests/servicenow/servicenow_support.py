"""Constants and helpers shared by the ServiceNow tests (imported by conftest and tests)."""

from __future__ import annotations

from typing import Any

import mcp_providers.plugins.servicenow as servicenow_plugin
from mcp_providers._serve.composition import Composition
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose

DEV_USER = "dev.integration"
DEV_PASSWORD = "dev-Pa55w0rd-7f3c"
PROD_CLIENT = "prod-mcp-client"
PROD_SECRET = "prod-Cl1ent-S3cret-91ab"
LAB_API_KEY = "lab-ApiKey-0c4d9e"
SECRETS = (DEV_PASSWORD, PROD_SECRET, LAB_API_KEY)

ENV = {"SN_TEST_DEV_PASSWORD": DEV_PASSWORD, "SN_TEST_PROD_SECRET": PROD_SECRET, "SN_TEST_LAB_KEY": LAB_API_KEY}


def dev_instance(emulator: Emulator, **overrides: Any) -> dict[str, Any]:
    return {
        "name": "dev",
        "url": emulator.base_url,
        "description": "Development (emulated)",
        "auth": {"type": "basic", "username": DEV_USER, "password_env": "SN_TEST_DEV_PASSWORD"},
        "timeout_seconds": 10,
        "live_poll": False,  # no background requests: tests count and fault the emulator's requests
        **overrides,
    }


def prod_instance(emulator: Emulator, **overrides: Any) -> dict[str, Any]:
    return {
        "name": "prod",
        "url": emulator.base_url,
        "description": "Production (emulated)",
        "auth": {"type": "oauth", "grant_type": "client_credentials", "client_id": PROD_CLIENT,
                 "client_secret_env": "SN_TEST_PROD_SECRET"},
        "timeout_seconds": 10,
        "live_poll": False,  # no background requests: tests count and fault the emulator's requests
        **overrides,
    }  # fmt: skip


def compose_servicenow(*instances: dict[str, Any]) -> Composition:
    return compose({"servicenow": servicenow_plugin}, {"servicenow": {"instances": list(instances)}})
