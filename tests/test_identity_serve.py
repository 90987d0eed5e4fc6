"""``mcp-providers serve --http`` as a resource server, as an operator runs it: one process,
``--workers 2`` on Redis, and behind the shipped nginx configuration; start-up against an issuer
that cannot be reached stops with the URL named.

Real parts: the CLI in a subprocess, a stand-in identity provider on loopback
(``identity_standin``), ``redis-server`` and ``nginx`` (Debian packages; under ``CI=true`` a
missing one fails the test instead of skipping it)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from identity_standin import StandInIdP, standin_idp
from prefork import python
from real_parts import redis_server
from waiting import wait_until

pytestmark = pytest.mark.slow

READ = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "documcp://ssgs/available"}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-11-25"}  # fmt: skip
DEPLOY_NGINX = Path(__file__).resolve().parent.parent / "deploy" / "nginx.conf"


def binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed; .ci/run installs it")
        pytest.skip(f"{name} is not installed (apt-get install -y {name})")
    return found


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[str]) -> None:
    """Until something listens on ``port``: the event, not a deadline (round 4 item 25)."""

    def listening() -> bool:
        with contextlib.closing(socket.socket()) as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(listening, f"something listens on 127.0.0.1:{port}", alive=proc)  # type: ignore[arg-type]
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}: {proc.stderr.read() if proc.stderr and proc.poll() is not None else ''}"
        ) from None


def write_config(tmp_path: Path, auth: str, extra: str = "") -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f'allow = ["ssg_catalog"]\n{extra}\n[server.auth]\n{auth}\n')
    return config


@contextlib.contextmanager
def serving(config: Path, port: int, *extra: str) -> Iterator[str]:
    """``serve --http 127.0.0.1:port *extra`` until the block ends; yields its origin."""
    env = {**os.environ, "MCP_PROVIDERS_CONFIG": str(config)}
    proc = subprocess.Popen([*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{port}", *extra],
                            env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        assert proc.stderr is not None
        proc.stderr.close()


def post(url: str, token: str | None) -> httpx2.Response:
    headers = dict(HEADERS) | ({"authorization": f"Bearer {token}"} if token else {})
    return httpx2.post(url, json=READ, headers=headers, timeout=20)


def assert_resource_server(idp: StandInIdP, origin: str, resource: str) -> None:
    """What every way of serving must show: metadata, the 401 naming it, a valid caller served."""
    metadata = httpx2.get(f"{origin}/.well-known/oauth-protected-resource/mcp", timeout=20)
    assert metadata.status_code == 200 and metadata.json()["resource"] == resource
    assert metadata.json()["authorization_servers"] == [idp.issuer]
    assert httpx2.get(f"{origin}/.well-known/oauth-protected-resource", timeout=20).status_code == 200
    refused = post(f"{origin}/mcp", None)
    assert refused.status_code == 401
    expected = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert f'resource_metadata="{expected}"' in refused.headers["www-authenticate"]
    served = post(f"{origin}/mcp", idp.sign(idp.claims(resource)))
    assert served.status_code == 200, served.text
    assert "ssgs" in served.text
    assert post(f"{origin}/mcp", idp.sign(idp.claims("https://other.example.com/mcp"))).status_code == 401


def test_serve_http_is_a_resource_server_and_its_ops_routes_stay_open(tmp_path: Path) -> None:
    port = free_port()
    with standin_idp() as idp:
        config = write_config(tmp_path, f'mode = "jwt"\nissuer = "{idp.issuer}"')
        with serving(config, port, "--stateless", "--json-response") as origin:
            # resource_url defaults to the bind address: the audience tokens must carry.
            assert_resource_server(idp, origin, f"{origin}/mcp")
            for path in ("/healthz", "/readyz", "/metrics"):
                assert httpx2.get(origin + path, timeout=20).status_code == 200, path


def test_an_unreachable_issuer_stops_start_up_naming_the_url(tmp_path: Path) -> None:
    with standin_idp() as idp:
        gone = idp.issuer
    config = write_config(tmp_path, f'mode = "jwt"\nissuer = "{gone}"\nhttp_timeout_seconds = 1')
    env = {**os.environ, "MCP_PROVIDERS_CONFIG": str(config)}
    result = subprocess.run([*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{free_port()}"],
                            env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 1
    assert f"cannot discover issuer {gone}" in result.stderr
    assert f"{gone}/.well-known/oauth-authorization-server" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_wildcard_bind_without_resource_url_is_refused_with_the_fix(tmp_path: Path) -> None:
    with standin_idp() as idp:
        config = write_config(tmp_path, f'mode = "jwt"\nissuer = "{idp.issuer}"')
        env = {**os.environ, "MCP_PROVIDERS_CONFIG": str(config)}
        argv = [*python(), "-m", "mcp_providers", "serve", "--http", f"0.0.0.0:{free_port()}", "--allow-host", "x"]
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "needs resource_url, the URL clients use" in result.stderr, result.stderr


def test_every_worker_of_serve_workers_is_the_same_resource_server(tmp_path: Path) -> None:
    port = free_port()
    with standin_idp() as idp, redis_server() as (redis_url, _):
        cluster = f'[cluster]\nredis_url = "{redis_url}"\nkey_prefix = "identity-workers"'
        config = write_config(tmp_path, f'mode = "jwt"\nissuer = "{idp.issuer}"', cluster)
        with serving(config, port, "--workers", "2", "--stateless", "--json-response") as origin:
            for _ in range(4):  # the kernel hands connections to either worker
                assert_resource_server(idp, origin, f"{origin}/mcp")


@contextlib.contextmanager
def nginx_to(upstream: int) -> Iterator[int]:
    """``deploy/nginx.conf`` on a free loopback port, its replicas pointed at ``upstream``."""
    nginx = binary("nginx")
    text = DEPLOY_NGINX.read_text()
    for n in (1, 2, 3):
        text = text.replace(f"server replica{n}:8000;", f"server 127.0.0.1:{upstream};")
    port = free_port()
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    text = text.replace("proxy_set_header Host mcp;", f"proxy_set_header Host 127.0.0.1:{upstream};")
    prefix = Path(tempfile.mkdtemp(prefix="nginx-identity-"))
    (prefix / "nginx.conf").write_text(text)
    globals_ = f"pid {prefix}/nginx.pid; error_log {prefix}/error.log; daemon off;"
    proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", globals_],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
        shutil.rmtree(prefix, ignore_errors=True)


def test_behind_nginx_the_configured_resource_url_is_what_clients_see(tmp_path: Path) -> None:
    upstream = free_port()
    with standin_idp() as idp, nginx_to(upstream) as public:
        resource = f"http://127.0.0.1:{public}/mcp"  # the proxy's URL, not the replica's
        auth = f'mode = "jwt"\nissuer = "{idp.issuer}"\nresource_url = "{resource}"'
        config = write_config(tmp_path, auth, '[server]\ntrusted_proxies = ["127.0.0.1"]\n')
        with serving(config, upstream, "--stateless", "--json-response"):
            assert_resource_server(idp, f"http://127.0.0.1:{public}", resource)
            # A token for the replica's own address is for another resource.
            direct = idp.sign(idp.claims(f"http://127.0.0.1:{upstream}/mcp"))
            assert post(f"http://127.0.0.1:{public}/mcp", direct).status_code == 401
