"""Upstream health (issue 42, build 10): the invoker tells :class:`UpstreamHealth` how each
provider's call ended, and ``/status`` shows it; a refusal is an answer, a cluster outage is not
the upstream's failure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mcp_providers._serve.state.cluster import ClusterUnavailable
from mcp_providers._serve.steps.invoker import Invoker, Work
from mcp_providers.errors import NotFound, ProviderFailed, ReadTimeout, ToolFailure, UpstreamError

pytestmark = pytest.mark.anyio

SN = Work(plugin="servicenow", provider="sn-prod", what="reading sn://x", target="sn://x", scoped=False)
DEAD = Work(plugin="servicenow", provider="sn-dead", what="reading sn://y", target="sn://y", scoped=False)


def _raises(exc: BaseException) -> Callable[[], Any]:
    async def call() -> None:
        raise exc

    return call


async def _answers() -> str:
    return "ok"


async def _hangs() -> None:
    await anyio.sleep(10)


async def test_each_way_a_call_ends_is_counted_and_the_state_follows_the_last_call() -> None:
    invoker = Invoker({"sn-dead": "lifespan raised"}, 0.05, False, {})
    now = [1_800_000_000.0]
    invoker.health._clock = lambda: now[0]
    assert await invoker.run(SN, _answers) == "ok"
    for exc in (NotFound("no such record"), ToolFailure("bad sys_id"), ClusterUnavailable("redis down")):
        with pytest.raises(type(exc)):  # answered, or our Redis's fault: the upstream is fine
            await invoker.run(SN, _raises(exc))
    [record] = invoker.health.snapshot()
    assert (record["state"], record["calls"], record["failing_since"]) == ("answering", 4, None)
    assert set(record["failures"].values()) == {0}
    now[0] += 60
    with pytest.raises(UpstreamError):
        await invoker.run(SN, _raises(UpstreamError("ServiceNow answered 503")))
    now[0] += 60
    with pytest.raises(ReadTimeout):
        await invoker.run(SN, _hangs)
    with pytest.raises(ProviderFailed):
        await invoker.run(SN, _raises(KeyError("surprise")))
    with pytest.raises(UpstreamError, match="failed to start"):
        await invoker.run(DEAD, _answers)
    dead, sn = invoker.health.snapshot()
    assert sn["failures"] == {"upstream": 1, "timeout": 1, "crashed": 1, "not started": 0}
    assert (sn["state"], sn["calls"], sn["last_failure_kind"]) == ("failing", 7, "crashed")
    assert sn["failing_since"] == "2027-01-15T08:01:00Z" and sn["last_ok"] == "2027-01-15T08:00:00Z"
    assert sn["last_failure"] == "2027-01-15T08:02:00Z"
    assert (dead["state"], dead["failures"]["not started"], dead["plugin"]) == ("failing", 1, "servicenow")
    now[0] += 60
    await invoker.run(SN, _answers)
    [_, sn] = invoker.health.snapshot()
    assert (sn["state"], sn["failing_since"], sn["last_ok"]) == ("answering", None, "2027-01-15T08:03:00Z")
    assert sn["failures"]["upstream"] == 1  # counts stay; the state is the last call's
