"""Static bearer tokens: weak configurations are refused, and no value is ever echoed."""

from __future__ import annotations

import pytest

from mcp_providers._serve.transport.auth import StaticTokenVerifier
from mcp_providers.config import AuthConfig, TokenConfig
from mcp_providers.errors import ConfigError

pytestmark = pytest.mark.anyio


def config(*pairs: tuple[str, str]) -> AuthConfig:
    return AuthConfig(tokens=tuple(TokenConfig(subject=s, token_env=e) for s, e in pairs))


def test_two_subjects_with_one_token_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOK_A", "same-token-value-0123456789")
    monkeypatch.setenv("TOK_B", "same-token-value-0123456789")
    with pytest.raises(ConfigError, match="'alice' and 'bob' have the same token") as err:
        StaticTokenVerifier(config(("alice", "TOK_A"), ("bob", "TOK_B")))
    assert "same-token-value" not in str(err.value)


def test_a_short_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOK_A", "a")
    with pytest.raises(ConfigError, match=r"TOK_A .* is shorter than 16 characters"):
        StaticTokenVerifier(config(("alice", "TOK_A")))


async def test_each_token_maps_to_its_own_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOK_A", "alice-token-0123456789abcdef")
    monkeypatch.setenv("TOK_B", "bob-token-0123456789abcdef00")
    verifier = StaticTokenVerifier(config(("alice", "TOK_A"), ("bob", "TOK_B")))
    alice = await verifier.verify_token("alice-token-0123456789abcdef")
    assert alice is not None and alice.subject == "alice"
    assert await verifier.verify_token("alice-token-0123456789abcdeX") is None
