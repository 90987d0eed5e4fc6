"""``[server.auth]`` and ``[server] trusted_proxies``: old static configs unchanged, and every
misfit refused with what was wrong and what would be right; ``check`` tries the identity provider."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_support import run_cli
from identity_standin import standin_idp

from mcp_providers._serve.transport.limits import proxy_headers_settings
from mcp_providers.config import ASYMMETRIC_ALGORITHMS, AuthConfig, ServerSettings, load_config
from mcp_providers.errors import ConfigError


def load(tmp_path: Path, text: str) -> ServerSettings:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(path).server


def test_an_existing_static_config_keeps_its_meaning(tmp_path: Path) -> None:
    server = load(
        tmp_path,
        """
[server.auth]
issuer_url = "https://login.example.com/"
tokens = [{subject = "alice", token_env = "ALICE_TOKEN"}]
""",
    )
    assert server.auth is not None and server.auth.mode == "static"
    assert [t.subject for t in server.auth.tokens] == ["alice"] and server.auth.tokens[0].scopes == ()
    assert str(server.auth.issuer_url) == "https://login.example.com/"
    assert server.trusted_proxies == ()


def test_the_agreed_jwt_shape_loads(tmp_path: Path) -> None:
    server = load(
        tmp_path,
        """
[server]
trusted_proxies = ["127.0.0.1", "10.0.0.0/8"]

[server.auth]
mode = "jwt"
resource_url = "https://mcp.example.com/mcp"
required_scopes = ["mcp:read"]
issuer = "https://idp.example.com/realms/x"
groups_claim = "groups"
claims = ["email"]
algorithms = ["RS256", "ES256"]
""",
    )
    auth = server.auth
    assert auth is not None and auth.issuers == ("https://idp.example.com/realms/x",)
    assert auth.algorithms == ("RS256", "ES256") and auth.leeway_seconds == 30
    assert auth.jwks_min_refresh_seconds == 60 and auth.audience is None
    assert server.trusted_proxies == ("127.0.0.1", "10.0.0.0/8")


def test_the_default_algorithms_are_the_asymmetric_ones() -> None:
    assert AuthConfig(mode="jwt", issuer="https://idp.example.com").algorithms == ASYMMETRIC_ALGORITHMS
    assert not any(a.startswith("HS") or a == "none" for a in ASYMMETRIC_ALGORITHMS)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('mode = "jwt"', 'mode "jwt" needs issuer = "https://<your identity provider>"'),
        ('issuer = "https://idp.example.com"', 'issuer is given but mode is "static": add mode = "jwt"'),
        ('mode = "jwt"\nissuer = ["https://a.example.com", "https://b.example.com"]\njwks_url = "https://a.example.com/k"',
         "jwks_url names one issuer's keys but several issuers are given"),
        ('mode = "jwt"\nissuer = "https://idp.example.com"\nalgorithms = ["RS256", "none"]',
         "none not allowed: use some of RS256"),
        ('mode = "jwt"\nissuer = "https://idp.example.com"\nalgorithms = ["HS256"]',
         "never accepted (an HMAC secret would be the issuer's public key)"),
        ('mode = "jwt"\nissuer = "http://idp.example.com"', "must use https (http only on loopback"),
        ('mode = "jwt"\nissuer = "https://idp.example.com/?tenant=1"', "has a query or fragment"),
        ('mode = "introspection"\nissuer = "https://idp.example.com"',
         'mode "introspection" needs client_id_env and client_secret_env'),
        ('mode = "jwt"\nissuer = "https://idp.example.com"\nclient_id_env = "X"',
         'client_id_env is only for mode "introspection", not "jwt"'),
        ('mode = "jwt"\nissuer = "https://idp.example.com"\ntokens = [{subject = "a", token_env = "A"}]',
         'tokens only apply to mode "static"'),
        ('tokens = [{subject = "a", token_env = "A"}]\nleeway_seconds = 5',
         'leeway_seconds is only for mode "jwt" or "introspection", not "static"'),
        ('mode = "oauth"', "Input should be 'static', 'jwt' or 'introspection'"),
    ],
    ids=["jwt-no-issuer", "issuer-without-mode", "jwks-several-issuers", "alg-none", "alg-hs256", "http-issuer",
         "issuer-query", "introspection-no-credentials", "introspection-field-in-jwt", "tokens-in-jwt",
         "jwt-field-in-static", "unknown-mode"],
)  # fmt: skip
def test_a_misfit_says_what_was_wrong_and_what_would_be_right(tmp_path: Path, table: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, f"[server.auth]\n{table}\n")
    assert "config.server.auth" in str(err.value) and says in str(err.value), str(err.value)


def test_a_trusted_proxy_must_be_an_address(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'nginx' is not an IP address or network; name the proxy, e\.g\. 127"):
        load(tmp_path, '[server]\ntrusted_proxies = ["nginx"]\n')


def test_forwarded_headers_are_believed_only_from_trusted_proxies() -> None:
    # uvicorn alone would trust 127.0.0.1 (its FORWARDED_ALLOW_IPS default): off unless configured.
    assert proxy_headers_settings(()) == {"proxy_headers": False, "forwarded_allow_ips": ""}
    assert proxy_headers_settings(("10.0.0.1",)) == {"proxy_headers": True, "forwarded_allow_ips": ["10.0.0.1"]}


def _check(tmp_path: Path, auth: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    config.write_text(f'allow = ["ssg_catalog"]\n\n[server.auth]\n{auth}\n')
    return run_cli("check", "-c", str(config))  # in process (cli_support)


@pytest.mark.slow
def test_check_reaches_the_issuer_and_names_it_when_it_cannot(tmp_path: Path) -> None:
    with standin_idp() as idp:
        passed = _check(tmp_path, f'mode = "jwt"\nissuer = "{idp.issuer}"')
        assert passed.returncode == 0 and "check passed" in passed.stdout, passed.stdout + passed.stderr
        gone = idp.issuer
    failed = _check(tmp_path, f'mode = "jwt"\nissuer = "{gone}"\nhttp_timeout_seconds = 1')
    assert failed.returncode == 1 and f"cannot discover issuer {gone}" in failed.stdout, failed.stdout
    assert "Traceback" not in failed.stdout + failed.stderr
