"""No secret leaks on any error path (issue 7).

Known secret values are configured: a ServiceNow password (Basic), an OAuth client secret, an
API key, and bearer tokens for ``[server.auth]``. The server runs as ``serve --http`` with the
broken-plugin zoo installed and an audit log; a real client then walks every error path the
other reliability tests cover (upstream faults, a refused instance, a raising and a hanging read,
hostile URIs, bad cursors, bad tool arguments, a wrong and a missing bearer token), and ``check``
and ``plugins`` run with the same config. Every byte of stdout, stderr, the audit log, every
result, error and receipt, and the emulators' request logs is scanned: zero hits.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from prefork import python
from reliability_support import install_target

from mcp_providers.plugins.servicenow.emulator import Emulator

pytestmark = pytest.mark.anyio

DEV_USER, DEV_PASSWORD = "secret.user", "SECRET-dev-Pa55w0rd-4e1a"
PROD_CLIENT, PROD_SECRET = "secret-client", "SECRET-prod-Cl1ent-77c2"
LAB_KEY = "SECRET-lab-ApiKey-3b9d"
ALICE_TOKEN = "SECRET-alice-bearer-8f21"
WRONG_TOKEN = "SECRET-wrong-bearer-0d0d"
SECRETS = (DEV_PASSWORD, PROD_SECRET, LAB_KEY, ALICE_TOKEN, WRONG_TOKEN)
DISTRIBUTION = Path(__file__).parent / "distributions" / "zoo_plugins"


@pytest.fixture(scope="module")
def zoo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("secrets-zoo")
    install_target(DISTRIBUTION, target)
    return target


@pytest.fixture
def setup(tmp_path: Path, zoo_site: Path) -> Iterator[dict[str, object]]:
    with (
        Emulator("dev", users={DEV_USER: DEV_PASSWORD}) as dev,
        Emulator("prod", oauth_clients={PROD_CLIENT: PROD_SECRET}) as prod,
        Emulator("lab", api_keys={LAB_KEY: "lab-integration"}) as lab,
        socket.socket() as unused,
    ):
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}"
        audit = tmp_path / "audit.jsonl"
        config = tmp_path / "mcp-providers.toml"
        config.write_text(f"""
deny = ["documcp_prompts"]
[server]
audit_log = "{audit}"
read_timeout = 2
[server.auth]
tokens = [{{subject = "alice", token_env = "SECRET_ALICE_TOKEN"}}]
[[plugins.servicenow.instances]]
name = "dev"
url = "{dev.base_url}"
timeout_seconds = 0.5
max_retries = 1
auth = {{ type = "basic", username = "{DEV_USER}", password_env = "SECRET_DEV_PASSWORD" }}
[[plugins.servicenow.instances]]
name = "prod"
url = "{prod.base_url}"
auth = {{ type = "oauth", grant_type = "client_credentials", client_id = "{PROD_CLIENT}", \
client_secret_env = "SECRET_PROD_SECRET" }}
[[plugins.servicenow.instances]]
name = "lab"
url = "{lab.base_url}"
auth = {{ type = "api_key", api_key_env = "SECRET_LAB_KEY" }}
[[plugins.servicenow.instances]]
name = "gone"
url = "{closed}"
auth = {{ type = "basic", username = "{DEV_USER}", password_env = "SECRET_DEV_PASSWORD" }}
""")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
        env |= {
            "MCP_PROVIDERS_CONFIG": str(config),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(zoo_site), env.get("PYTHONPATH")])),
            "SECRET_DEV_PASSWORD": DEV_PASSWORD,
            "SECRET_PROD_SECRET": PROD_SECRET,
            "SECRET_LAB_KEY": LAB_KEY,
            "SECRET_ALICE_TOKEN": ALICE_TOKEN,
        }
        yield {"dev": dev, "prod": prod, "lab": lab, "env": env, "audit": audit, "tmp": tmp_path}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _walk_error_paths(url: str, dev: Emulator, prod: Emulator, lab: Emulator) -> list[str]:
    """Every answer, as text. The instances echo the credentials they receive in 401 bodies
    (``Authorization``, ``x-sn-apikey``), as some proxies do: the plugin must redact them."""
    seen: list[str] = []
    for emulator in (dev, prod, lab):
        emulator.echo_authorization = True

    async def attempt(call: object) -> None:
        try:
            result = await call  # type: ignore[misc]
            seen.append(result.model_dump_json())
        except MCPError as exc:
            seen.append(exc.error.model_dump_json())
        except Exception as exc:
            raise AssertionError(f"{call!r} failed at the transport: {exc!r}") from exc

    for token in (WRONG_TOKEN, None):  # refused before MCP: the answer must not echo the token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers) as http:
            answer = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert answer.status_code == 401
            seen.append(answer.text + json.dumps(dict(answer.headers)))

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE_TOKEN}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        for uri in ("servicenow://instances", "servicenow://dev/info", "servicenow://prod/incidents/INC0010001",
                    "servicenow://lab/incidents/INC0010001"):  # fmt: skip
            await attempt(client.read_resource(uri))  # successes carry receipts
        faults = [{"status": 401}, {"status": 403}, {"status": 404}, {"status": 500}, {"times": 2, "status": 429},
                  {"status": None, "malformed": True}, {"status": None, "truncated": True},
                  {"status": None, "delay_seconds": 1}]  # fmt: skip
        for emu, name in ((dev, "dev"), (prod, "prod"), (lab, "lab")):
            for fault in faults:
                emu.fail_next(**fault)  # type: ignore[arg-type]
                await attempt(client.read_resource(f"servicenow://{name}/incidents/INC0010002"))
                emu.clear_faults()
        for emu, name in ((dev, "dev"), (prod, "prod"), (lab, "lab")):  # tools get echoed credentials too
            emu.fail_next(2, status=401)
            await attempt(client.call_tool("servicenow_query_table", {"instance": name, "table": "incident"}))
            emu.clear_faults()
        prod.fail_next(status=401, scope="oauth")
        prod.expire_tokens()
        await attempt(client.read_resource("servicenow://prod/incidents/INC0010003"))
        await attempt(client.read_resource("servicenow://gone/incidents/INC0010001"))
        await attempt(client.read_resource("raises://item"))
        await attempt(client.read_resource("hangs://item"))
        await attempt(client.read_resource("printer://noisy"))
        for uri in (
            "servicenow://dev/incidents/INC%00^ORDERBY",
            "servicenow://%2e%2e/info",
            "file:///etc",
        ):
            await attempt(client.read_resource(uri))
        await attempt(client.list_resources(cursor="not-a-cursor"))
        await attempt(client.call_tool("servicenow_query_table", {"instance": "dev", "table": 5}))
        await attempt(client.call_tool("servicenow_get_record", {"instance": "gone", "table": "incident",
                                                                  "sys_id": "0" * 32}))  # fmt: skip
        dev.fail_next(status=500)
        await attempt(client.call_tool("servicenow_create_incident", {"instance": "dev", "short_description": "x"}))
        await attempt(client.call_tool("servicenow_create_incident", {"instance": "prod", "short_description": "y"}))
    return seen


def _at_once(commands: list[list[str]], env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Each command run with ``env`` and an empty stdin, all at once (``check`` waits out the hanging
    read meanwhile); what each printed and its exit status."""
    started = [subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for argv in commands]  # fmt: skip
    done = []
    for process in started:
        try:
            stdout, stderr = process.communicate(timeout=120)
        finally:
            process.kill()
        done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return done


async def test_no_configured_secret_appears_in_any_output(setup: dict[str, object]) -> None:
    env = setup["env"]
    assert isinstance(env, dict)
    tmp = setup["tmp"]
    assert isinstance(tmp, Path)
    dev, prod, lab = setup["dev"], setup["prod"], setup["lab"]
    assert isinstance(dev, Emulator) and isinstance(prod, Emulator) and isinstance(lab, Emulator)

    port = _free_port()
    stdout, stderr = tmp / "serve.out", tmp / "serve.err"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        server = subprocess.Popen(
            [*python(), "-m", "mcp_providers", "serve", "--http", f"127.0.0.1:{port}"],
            # A plugin whose import failed stops serve (what it would register is unknown): leave it out.
            env={**env, "MCP_PROVIDERS_DISABLE": "zoo_raises_on_import"},
            stdout=out,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 60  # bound on startup, not an assertion
            while time.monotonic() < deadline and server.poll() is None:
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.1)
            assert server.poll() is None, stderr.read_text()
            answers = await _walk_error_paths(f"http://127.0.0.1:{port}/mcp", dev, prod, lab)
        finally:
            server.terminate()
            server.wait(timeout=30)

    cli = _at_once([[*python(), "-m", "mcp_providers", *verb] for verb in (["check"], ["plugins", "--json",
                   "--settings"], ["serve", "--strict"])], env)  # fmt: skip
    haystacks = {
        "answers": "\n".join(answers),
        "serve stdout": stdout.read_text(errors="replace"),
        "serve stderr": stderr.read_text(errors="replace"),
        "audit log": Path(str(setup["audit"])).read_text(),
        "emulator logs": repr(dev.requests) + repr(prod.requests) + repr(lab.requests),
        **{f"{' '.join(run.args[3:])} stdout+stderr": run.stdout + run.stderr for run in cli},
    }
    # The walk really went down the error paths it claims to.
    assert '"code":-32006' in haystacks["answers"] and '"code":-32603' in haystacks["answers"]
    assert '"code":-32005' in haystacks["answers"] and '"code":-32602' in haystacks["answers"]
    assert "io.mcp-providers/receipt" in haystacks["answers"]
    assert haystacks["audit log"].count("\n") >= 5  # successes and calls (failed reads are not audited)
    assert "Traceback" in haystacks["serve stderr"]  # the raising read's traceback went to the log
    assert cli[0].returncode == 1 and cli[2].returncode == 1

    basic = [
        base64.b64encode(f"{u}:{p}".encode()).decode()
        for u, p in ((DEV_USER, DEV_PASSWORD), (PROD_CLIENT, PROD_SECRET))
    ]
    secrets = [*SECRETS, *basic, *prod.issued_tokens()]
    assert len(secrets) > len(SECRETS)  # OAuth tokens were issued, and are scanned for too
    hits = [(where, secret) for where, text in haystacks.items() for secret in secrets if secret in text]
    assert hits == []
