"""The audit trail never holds a guessable digest of tool arguments, nor a raw line separator.

``argumentsHmac`` is HMAC-SHA256 over the canonical JSON of the arguments, keyed with the
deployment's key (``[server] audit_key_env`` names the variable, default
``MCP_PROVIDERS_AUDIT_KEY``); without one a random per-process key is used and a warning says so,
once. A plain SHA-256 of ``{"customer":"c-17"}`` could be reversed by trying likely values.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from pathlib import Path

import pytest
from mcp import MCPError
from wire_support import Shapes, plugin

from mcp_providers._serve.steps import custody
from mcp_providers.config import ServerSettings
from mcp_providers.models import RECEIPT_KEY
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

CANONICAL = b'{"text":"c-17","times":1}'


async def _receipt(server: ServerSettings) -> dict[str, object]:
    composition = compose({"shapes": plugin(Shapes())}, server=server)
    async with connect(composition) as client:
        result = await client.call_tool("echo", {"text": "c-17"})
    return (result.meta or {})[RECEIPT_KEY]


async def test_arguments_are_keyed_with_the_deployment_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_AUDIT_KEY", "deployment-key-1")
    receipt = await _receipt(ServerSettings(audit_key_env="MY_AUDIT_KEY"))
    assert "argumentsSha256" not in receipt
    assert receipt["argumentsHmac"] == hmac.new(b"deployment-key-1", CANONICAL, hashlib.sha256).hexdigest()
    assert receipt["argumentsHmac"] != hashlib.sha256(CANONICAL).hexdigest()


AUDIT_KEY_WARNING = (
    "no audit key: $MCP_PROVIDERS_AUDIT_KEY is unset, so argumentsHmac in the audit log and receipts is keyed "
    "with a random per-process key (not comparable across restarts or replicas); fix it with this line before "
    "starting the server: export MCP_PROVIDERS_AUDIT_KEY="
    "\"$(python3 -c 'import secrets; print(secrets.token_hex(32))')\""
)


async def test_without_a_key_a_random_one_is_used_and_a_warning_given_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.delenv("MCP_PROVIDERS_AUDIT_KEY", raising=False)
    monkeypatch.setattr(custody, "_random_key", None)
    monkeypatch.setattr(custody, "_warned", False)
    with caplog.at_level(logging.WARNING):
        first = await _receipt(ServerSettings(audit_log=tmp_path / "audit.jsonl"))
        second = await _receipt(ServerSettings(audit_log=tmp_path / "audit.jsonl"))
    assert first["argumentsHmac"] == second["argumentsHmac"]  # one key per process
    assert first["argumentsHmac"] != hashlib.sha256(CANONICAL).hexdigest()
    warnings = [r.getMessage() for r in caplog.records if "MCP_PROVIDERS_AUDIT_KEY" in r.getMessage()]
    assert warnings == [AUDIT_KEY_WARNING]


@pytest.mark.parametrize(
    ("server", "warned"),
    [
        (ServerSettings(), False),  # neither an audit log nor a key variable: nothing to compare digests across
        (ServerSettings(audit_key_env="MCP_PROVIDERS_AUDIT_KEY"), True),  # digests asked for by name
        (ServerSettings(audit_key_env="MY_KEY"), True),
    ],
    ids=["default", "key-env-named", "other-key-env"],
)
async def test_the_audit_key_warning_comes_only_when_an_audit_log_or_digests_are_configured(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, server: ServerSettings, warned: bool
) -> None:
    monkeypatch.delenv("MCP_PROVIDERS_AUDIT_KEY", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    monkeypatch.setattr(custody, "_random_key", None)
    monkeypatch.setattr(custody, "_warned", False)
    with caplog.at_level(logging.WARNING):
        receipt = await _receipt(server)
    assert len(str(receipt["argumentsHmac"])) == 64  # digests are still made, with the per-process key
    warnings = [r.getMessage() for r in caplog.records if r.getMessage().startswith("no audit key")]
    variable = server.audit_key_env or ""
    assert warnings == ([AUDIT_KEY_WARNING.replace("MCP_PROVIDERS_AUDIT_KEY", variable)] if warned else [])


async def test_audit_lines_escape_line_separators(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    composition = compose({"shapes": plugin(Shapes())}, server=ServerSettings(audit_log=audit))
    async with connect(composition) as client:
        with pytest.raises(MCPError):
            await client.call_tool("nope\u2028\u2029\x85", {})
    raw = audit.read_text(encoding="utf-8")
    assert not any(c in raw for c in "\u2028\u2029\x85")
    lines = raw.splitlines()
    assert all(json.loads(line) for line in lines)
    assert "nope\u2028\u2029\x85" in [json.loads(line)["target"] for line in lines]
