"""Faults from the emulated instances, end to end through an MCP client (issue 7).

Complements test_end_to_end.py (429 with Retry-After, wrong password, 500, timeout) and
test_client.py (bounded 429 retries, malformed JSON, unreachable instance at the client level):
here every fault is read through the composed server, the error must be a clear -32006 (or
-32602 for a missing record), and the *other* instance must keep answering in the same session.
A fault in the middle of a multi-page read fails the read: no partial data presented as complete.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from mcp import Client, MCPError
from servicenow_support import compose_servicenow, dev_instance, prod_instance

from mcp_providers.plugins.servicenow import instance
from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.testing import connect

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _short_unsaid_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 429 without Retry-After waits 0.1, 0.2, 0.4 s here, not the shipped 1, 2, 4 s: the retries
    and their bound are what is tested, the waits only waited out."""
    monkeypatch.setattr(instance, "UNSAID_WAIT_SECONDS", 0.1)


DEV_READ = "servicenow://dev/incidents/INC0010002"

# fault kwargs for fail_next -> (error code, text the message must contain)
FAULTS: dict[str, tuple[dict[str, Any], int, str]] = {
    "429 without Retry-After, retries exhausted": (
        {"times": 3, "status": 429},
        -32006,
        "failed with HTTP 429: Rate limit exceeded",
    ),
    "401": ({"status": 401}, -32006, "failed with HTTP 401: User Not Authenticated"),
    "403": ({"status": 403}, -32006, "failed with HTTP 403"),
    "404": ({"status": 404}, -32602, "failed with HTTP 404"),
    "500": ({"status": 500}, -32006, "failed with HTTP 500"),
    "malformed JSON": ({"status": None, "malformed": True}, -32006, "with a body that is not valid JSON"),
    "truncated body": (
        {"status": None, "truncated": True},
        -32006,
        "instance 'dev': query of incident: the connection to http://127.0.0.1:",
    ),
}


async def read_json(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    body: dict[str, Any] = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    return body


async def assert_prod_unaffected(client: Client) -> None:
    body = await read_json(client, "servicenow://prod/incidents/INC0010001")
    assert body["metadata"]["instance"] == "prod" and body["data"]["number"] == "INC0010001"


@pytest.mark.parametrize("fault", [*FAULTS])
async def test_fault_is_a_clear_error_and_the_other_instance_is_unaffected(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: dict[str, str], fault: str
) -> None:
    kwargs, code, text = FAULTS[fault]
    composition = compose_servicenow(
        dev_instance(dev_emulator, max_retries=2, max_retry_after_seconds=8), prod_instance(prod_emulator)
    )
    async with connect(composition) as client:
        dev_emulator.fail_next(**kwargs)
        with pytest.raises(MCPError) as caught:
            await client.read_resource(DEV_READ)
        assert caught.value.error.code == code, caught.value.error.message
        assert text in caught.value.error.message
        assert "Traceback" not in caught.value.error.message
        await assert_prod_unaffected(client)
        # dev recovers once the fault has passed: nothing stuck, nothing cached from the failure
        assert (await read_json(client, DEV_READ))["data"]["number"] == "INC0010002"
    retries = kwargs.get("times", 1)
    assert [r.status for r in dev_emulator.table_requests()][:retries] == [
        r.status for r in dev_emulator.table_requests() if r.fault
    ]
    assert len([r for r in dev_emulator.table_requests() if r.fault]) == retries  # bounded: no extra attempts


async def test_429_without_retry_after_then_success_backs_off_and_succeeds(client, dev_emulator, prod_emulator):
    dev_emulator.fail_next(status=429)
    body = await read_json(client, DEV_READ)
    assert body["data"]["number"] == "INC0010002"
    assert [r.status for r in dev_emulator.table_requests()] == [429, 200]


async def test_slow_answer_times_out_while_the_other_instance_answers(dev_emulator, prod_emulator, secrets_env):
    composition = compose_servicenow(dev_instance(dev_emulator, timeout_seconds=0.5), prod_instance(prod_emulator))
    async with connect(composition) as client:
        dev_emulator.fail_next(status=None, delay_seconds=2)
        with pytest.raises(MCPError) as caught:
            await client.read_resource(DEV_READ)
        assert caught.value.error.code == -32006
        assert "got no answer within 0.5 s" in caught.value.error.message
        await assert_prod_unaffected(client)


async def test_refused_connection_is_clear_and_the_other_instance_is_unaffected(
    dev_emulator: Emulator, prod_emulator: Emulator, secrets_env: dict[str, str]
) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    composition = compose_servicenow(dev_instance(dev_emulator, url=closed), prod_instance(prod_emulator))
    async with connect(composition) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(DEV_READ)
        assert caught.value.error.code == -32006
        assert f"could not reach {closed} (ConnectError)" in caught.value.error.message
        await assert_prod_unaffected(client)


@pytest.mark.parametrize("fault", ["500", "truncated body", "malformed JSON"])
async def test_a_fault_on_a_later_page_fails_the_whole_read(client, dev_emulator, fault: str) -> None:
    """No partial data presented as complete: a 250-record update set read in 3 pages."""
    counts: dict[str, int] = {}
    for record in dev_emulator.records("sys_update_xml"):
        counts[record["update_set"]] = counts.get(record["update_set"], 0) + 1
    sys_id = next(s for s, n in counts.items() if n == 250)
    uri = f"servicenow://dev/update-sets/{sys_id}"
    await read_json(client, uri)  # once cleanly, to learn which request fetches the last page
    requests = dev_emulator.table_requests()
    last_page = next(i for i, r in enumerate(requests) if r.query.get("sysparm_offset") == "200")
    dev_emulator.clear_requests()
    dev_emulator.fail_next(last_page, status=None)  # let the earlier requests through
    kwargs, _, text = FAULTS[fault]
    dev_emulator.fail_next(**kwargs)
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    assert caught.value.error.code == -32006
    assert text.replace("query of incident", "query of sys_update_xml") in caught.value.error.message
    served = dev_emulator.table_requests()
    assert served[last_page].query.get("sysparm_offset") == "200" and served[last_page].status in (200, 500)
