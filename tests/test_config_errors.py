"""Config errors say what is wrong without echoing secrets, and never end in a traceback.

``check`` and the refused ``serve`` arguments run in this process (:func:`cli_support.run_cli`: a
traceback still shows on stderr; :func:`cli_support.no_serving`: serving instead of refusing
fails); ``serve --strict``, ``plugins --json`` and one refused ``serve --http`` run as processes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_support import no_serving, run_cli
from prefork import python

SECRET = "hunter2-5b1f"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*python(), "-m", "mcp_providers", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_invalid_settings_never_echo_secrets(tmp_path: Path) -> None:
    config = tmp_path / "sn.toml"
    config.write_text(f"""
[[plugins.servicenow.instances]]
name = "dev"
url = "https://admin:{SECRET}@dev.example.service-now.com"
auth = {{ type = "basic", username = "u", password_env = "X", password = "{SECRET}" }}
""")
    for command in (["check"], ["plugins", "--json"], ["serve", "--strict"]):
        result = (run_cli if command == ["check"] else run)(*command, "-c", str(config))
        output = result.stdout + result.stderr
        assert "user info" in output, output  # the problem is still explained
        assert SECRET not in output, f"{command}: {output}"
        assert "Traceback" not in output


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b'allow = ["\xff\xfe"]\n'), "is not UTF-8"),
        (lambda p: p.write_text('[server.auth]\nissuer_url = "not a url"\n'), "server.auth.issuer_url"),
        (lambda p: p.write_text('[server]\naudit_log = "/"\n'), "server.audit_log"),
    ],
    ids=["directory", "not-utf8", "bad-issuer", "audit-log-is-a-directory"],
)
def test_bad_config_files_get_one_clear_line(tmp_path: Path, make: object, expected: str) -> None:
    path = tmp_path / "config.toml"
    make(path)  # type: ignore[operator]
    result = run_cli("check", "-c", str(path))
    assert result.returncode == 1
    assert expected in result.stderr, result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("hostport", ["127.0.0.1:99999", "127.0.0.1:0x50", "nonsense", "http://127.0.0.1:8000"])
def test_serve_http_rejects_a_bad_port_before_starting(hostport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    no_serving(monkeypatch)
    result = run_cli("serve", "--http", hostport)
    assert result.returncode == 2
    assert "HOST:PORT" in result.stderr and "Traceback" not in result.stderr


def test_serve_on_every_interface_needs_the_host_names_it_answers() -> None:
    result = run("serve", "--http", "0.0.0.0:8123")
    assert result.returncode == 2 and "--allow-host" in result.stderr


def test_http_flags_need_http(monkeypatch: pytest.MonkeyPatch) -> None:
    no_serving(monkeypatch)
    result = run_cli("serve", "--stateless")
    assert result.returncode == 2 and "go with --http" in result.stderr


def test_check_fails_when_nothing_is_served(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'deny = ["ssg_catalog", "config_templates", "workflows", "documcp_prompts", "servicenow", "policy"]\n'
    )
    result = run_cli("check", "-c", str(config))
    assert result.returncode == 1
    assert "nothing is served: every plugin is off or rejected" in result.stdout


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ("tokens = []", 'server.auth: mode "static" needs tokens = [{subject = "...", token_env = "..."}]'),
        (
            'tokens = [{subject = "a", token_env = "T"}, {subject = "b", token_env = "T"}]',
            "each token needs its own token_env; repeated: T",
        ),
    ],
    ids=["no-tokens", "shared-variable"],
)
def test_auth_settings_that_would_weaken_auth_are_refused(tmp_path: Path, auth: str, expected: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[server.auth]\n{auth}\n")
    result = run_cli("check", "-c", str(config))
    assert result.returncode == 1 and expected in result.stderr, result.stderr
