"""Who reads ``/metrics`` (tester 30, not filed): the page names every served method and tool
(``mcp_providers_tool_seconds{tool,plugin}``), no content, to anyone who reaches the port, whatever
``[server.auth]`` and the policy hide from a caller's ``tools/list``. By default it stays open (a
Prometheus scrape needs nothing); ``[server.admin] metrics = true`` puts it behind the admin gate
as ``/status``: 401 without a token, 403 with one the gate does not accept. A real ``serve --http``."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_support import serve_process

from mcp_providers.config import AdminSettings

ADMIN = "metrics-admin-" + "4d" * 20
CALLER = "metrics-caller-" + "b2" * 16
CONFIG = '[server.auth]\ntokens = [{subject = "alice", token_env = "METRICS_TEST_CALLER"}]\n'
ADMIN_TABLE = '[server.admin]\ntoken_env = "METRICS_TEST_ADMIN"\n'


def _get(url: str, token: str | None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _serving(folder: Path, text: str) -> Iterator[str]:
    config = folder / "mcp-providers.toml"
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env.update(METRICS_TEST_ADMIN=ADMIN, METRICS_TEST_CALLER=CALLER)
    with serve_process(env, folder / "serve.log", "-c", str(config)) as (base, _):
        yield base


@pytest.fixture
def open_metrics(tmp_path: Path) -> Iterator[str]:
    yield from _serving(tmp_path, CONFIG + ADMIN_TABLE)


@pytest.fixture
def guarded_metrics(tmp_path: Path) -> Iterator[str]:
    yield from _serving(tmp_path, CONFIG + ADMIN_TABLE + "metrics = true\n")


def test_metrics_answer_a_scrape_without_a_token_by_default(open_metrics: str) -> None:
    code, page = _get(f"{open_metrics}/metrics", None)
    assert code == 200 and "mcp_providers_requests_total" in page


def test_metrics_behind_the_admin_gate_need_its_token(guarded_metrics: str) -> None:
    assert _get(f"{guarded_metrics}/metrics", None)[0] == 401
    assert _get(f"{guarded_metrics}/metrics", CALLER)[0] == 403  # a caller of the MCP path is no operator
    code, page = _get(f"{guarded_metrics}/metrics", ADMIN)
    assert code == 200 and "mcp_providers_requests_total" in page
    assert _get(f"{guarded_metrics}/healthz", None)[0] == 200  # the probes stay open


def test_metrics_behind_the_gate_need_someone_the_gate_admits() -> None:
    with pytest.raises(ValueError, match="names no one"):
        AdminSettings(metrics=True)
