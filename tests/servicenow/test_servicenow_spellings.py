"""ServiceNow reads in other spellings of their URIs (issue 24, item 5): the provider routes by
declaration and decoded values, and the instance name (the host) is compared as written."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from mcp import MCPError
from servicenow_support import dev_instance, servicenow_plugin

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "sent",
    ["SERVICENOW://dev/incidents", "servicenow://%64ev/incidents", "ServiceNow://instances", "servicenow://%74ables"],
)
async def test_servicenow_reads_in_other_spellings(
    sent: str, dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    composition = compose(
        {"servicenow": servicenow_plugin}, {"servicenow": {"instances": [dev_instance(dev_emulator)]}}
    )
    async with connect(composition) as client:
        got = await client.read_resource(sent)
    assert json.loads(got.contents[0].text)["metadata"]["record_count"] >= 1  # type: ignore[union-attr]


async def test_a_servicenow_instance_name_is_case_sensitive(
    dev_emulator: Emulator, secrets_env: Mapping[str, str]
) -> None:
    """The host is left as written (custom schemes give it their own meaning): ``DEV`` is not ``dev``,
    and the refusal names only what is configured."""
    composition = compose(
        {"servicenow": servicenow_plugin}, {"servicenow": {"instances": [dev_instance(dev_emulator)]}}
    )
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("servicenow://DEV/incidents")
    assert caught.value.error.code == -32602 and "'DEV'" in caught.value.error.message
