"""Issue 42 (must show 2): a real Prometheus server (Debian's ``prometheus``) scrapes a replica's
``/metrics`` every half second, takes every sample (target up, no scrape error), and the first error
of each kind (a denial, invalid params, an unknown method, a failed tool call) shows in
``increase()`` through its HTTP query API: the series existed at 0 before, so the first burst is
not lost in the series' first sample.

Served as ``serve --http`` serves it (the CLI's app on a real uvicorn, loopback); one Prometheus for
the module.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from real_parts import require_tool
from serve_support import LIVE, URI, NotesPlugin, free_port, post, served
from test_metrics_on_call import FlakyPlugin
from waiting import wait_until

from mcp_providers import Decision, hookimpl
from mcp_providers.testing import compose

pytestmark = [pytest.mark.slow]

SCRAPE = "500ms"
REQUESTS = "mcp_providers_requests_total"
FIRST_ERRORS = {
    "denied": {"method": "resources/read", "outcome": "-32003"},
    "invalid params": {"method": "resources/read", "outcome": "-32602"},
    "unknown method": {"method": "other", "outcome": "-32601"},
    "failed tool call": {"method": "tools/call", "outcome": "tool_error"},
}
"""Each kind of first error, as the labels of its ``mcp_providers_requests_total`` series."""


class DenyLive:
    @hookimpl
    def authorize(self, action: str, target: str) -> Decision | None:
        return Decision(False, "not this one") if target == LIVE and action == "read" else None


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """A replica's port, and the URL of a Prometheus scraping it every :data:`SCRAPE`."""
    binary = require_tool("prometheus", "apt-get install -y prometheus", also=("/usr/bin",))
    home = tmp_path_factory.mktemp("prometheus")
    plugins = {"notes": NotesPlugin(), "flaky": FlakyPlugin(), "policy": DenyLive()}
    with served(compose(plugins), stateless=True, json_response=True) as port:
        (home / "prometheus.yml").write_text(
            f"global: {{scrape_interval: {SCRAPE}, scrape_timeout: 400ms}}\n"
            f"scrape_configs:\n  - job_name: mcp\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        )
        web = free_port()
        log = home / "prometheus.log"
        with log.open("wb") as stderr:
            proc = subprocess.Popen(
                [binary, f"--config.file={home / 'prometheus.yml'}", f"--storage.tsdb.path={home / 'data'}",
                 f"--web.listen-address=127.0.0.1:{web}", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=stderr,
            )  # fmt: skip
        base = f"http://127.0.0.1:{web}"
        try:
            wait_until(lambda: _query(base, 'up{job="mcp"}') == [1.0], "Prometheus scrapes the replica",
                       alive=proc, log=log)  # fmt: skip
            yield port, base
        finally:
            proc.terminate()
            proc.wait(timeout=15)


def _query(base: str, expression: str) -> list[float]:
    """The values of an instant query (``/api/v1/query``), or ``[]`` when Prometheus is not up yet."""
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': expression})}"
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as answer:
        body: dict[str, Any] = json.load(answer)
        assert body["status"] == "success", body
        return [float(sample["value"][1]) for sample in body["data"]["result"]]
    return []


def _series(labels: dict[str, str]) -> str:
    return REQUESTS + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def test_prometheus_takes_every_sample_and_increase_sees_the_first_error_of_each_kind(
    scraped: tuple[int, str],
) -> None:
    port, base = scraped
    for labels in FIRST_ERRORS.values():  # scraped at 0 before anything failed
        wait_until(lambda labels=labels: _query(base, _series(labels)) == [0.0], f"{_series(labels)} scraped at 0")
    _, _, denied = post(port, {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": LIVE}})
    _, _, missing = post(port, {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                                "params": {"uri": URI + "-missing"}})  # fmt: skip
    _, _, unknown = post(port, {"jsonrpc": "2.0", "id": 3, "method": "x/made-up", "params": {}})
    _, _, failed = post(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                               "params": {"name": "flaky", "arguments": {"fail": True}}})  # fmt: skip
    assert [denied["error"]["code"], missing["error"]["code"], unknown["error"]["code"]] == [-32003, -32602, -32601]
    assert failed["result"]["isError"] is True
    for kind, labels in FIRST_ERRORS.items():
        expression = f"increase({_series(labels)}[1m])"
        [seen] = wait_until(lambda e=expression: [v for v in _query(base, e) if v > 0], f"increase() of {kind}")
        assert seen >= 1, (kind, seen)  # one error, extrapolated over the window: at least 1
    calm = _series({"method": "resources/read", "outcome": "-32009"})  # no request was rate limited
    assert _query(base, f"increase({calm}[1m])") == [0.0]
    with urllib.request.urlopen(f"{base}/api/v1/targets", timeout=5) as answer:
        [target] = json.load(answer)["data"]["activeTargets"]
    assert (target["health"], target["lastError"]) == ("up", "")  # every sample parsed and taken
    assert _query(base, 'scrape_samples_scraped{job="mcp"}')[0] > 50
