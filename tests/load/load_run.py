"""Load over streamable HTTP on loopback: many clients, many reads, nothing mixed up.

Starts two ServiceNow emulators (``dev`` with Basic auth, ``prod`` with OAuth) in this process
and ``python -m mcp_providers serve --http 127.0.0.1:<port> --stateless`` as a subprocess serving
the documentation plugins and ServiceNow. Each of ``--clients`` real MCP clients reads URIs
round-robin (fixed documentation resources and incident records from both instances) until
``--reads`` reads are done in total. Every answer is compared with a baseline read of the same
URI (JSON metadata timestamps aside): a different body, or an answer for another URI or instance,
is a mismatch. The server's resident memory is sampled every ``--sample-every`` reads.

    uv run python tests/load/load_run.py --reads 20000 --clients 50

Bounded: the run stops at ``--reads`` reads or ``--max-seconds``, whichever comes first, and only
talks to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, MCPError

from mcp_providers.plugins.servicenow.emulator import Emulator

DEV_USER, DEV_PASSWORD = "load.user", "load-Pa55w0rd-d3v"
PROD_CLIENT, PROD_SECRET = "load-client", "load-Cl1ent-S3cret-pr0d"


@dataclass
class Report:
    reads: int = 0
    errors: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    rss: list[tuple[int, int]] = field(default_factory=list)
    """(reads done, server RSS in bytes)"""
    seconds: float = 0.0
    clients: int = 0
    uris: int = 0
    server_log: str = ""

    def summary(self) -> dict[str, Any]:
        return {
            "reads": self.reads,
            "clients": self.clients,
            "distinct_uris": self.uris,
            "errors": len(self.errors),
            "mismatches": len(self.mismatches),
            "seconds": round(self.seconds, 1),
            "reads_per_second": round(self.reads / self.seconds, 1) if self.seconds else None,
            "rss_mib": [(n, round(b / 2**20, 1)) for n, b in self.rss],
            "first_errors": self.errors[:5],
            "first_mismatches": self.mismatches[:5],
        }


def _rss(pid: int) -> int:
    """Resident memory of process ``pid`` in bytes (Linux ``/proc``; no extra dependency)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _normal(text: str) -> str:
    """The body with per-read fields (JSON metadata timestamps) removed."""
    try:
        body = json.loads(text)
    except ValueError:
        return text
    if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        body["metadata"].pop("timestamp", None)
    return json.dumps(body, sort_keys=True)


async def _wait_until_serving(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    with anyio.fail_after(seconds):
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode} before serving")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            await anyio.sleep(0.1)


async def run_load(reads: int, clients: int, *, sample_every: int = 1000, max_seconds: float = 600) -> Report:
    report = Report(clients=clients)
    with ExitStack() as stack:
        dev = stack.enter_context(Emulator("dev", users={DEV_USER: DEV_PASSWORD}))
        prod = stack.enter_context(Emulator("prod", oauth_clients={PROD_CLIENT: PROD_SECRET}))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        config = folder / "mcp-providers.toml"
        config.write_text(
            'allow = ["ssg_catalog", "config_templates", "workflows", "servicenow"]\n'
            "[[plugins.servicenow.instances]]\n"
            f'name = "dev"\nurl = "{dev.base_url}"\n'
            f'auth = {{ type = "basic", username = "{DEV_USER}", password_env = "LOAD_DEV_PASSWORD" }}\n'
            "[[plugins.servicenow.instances]]\n"
            f'name = "prod"\nurl = "{prod.base_url}"\n'
            f'auth = {{ type = "oauth", grant_type = "client_credentials", client_id = "{PROD_CLIENT}", '
            'client_secret_env = "LOAD_PROD_SECRET" }\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
        env |= {"LOAD_DEV_PASSWORD": DEV_PASSWORD, "LOAD_PROD_SECRET": PROD_SECRET}
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        args = ["-m", "mcp_providers", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}", "--stateless"]
        log = stack.enter_context((folder / "server.log").open("wb"))
        server = subprocess.Popen([sys.executable, *args], env=env, stderr=log)
        try:
            await _wait_until_serving(port, server)
            async with Client(url, cache=None) as probe:
                fixed = [r.uri for r in (await probe.list_resources()).resources]
                incidents = [
                    f"servicenow://{name}/incidents/{record['number']}"
                    for name, emu in (("dev", dev), ("prod", prod))
                    for record in emu.records("incident")
                ]
                uris = [u for u in fixed if u.startswith(("documcp://", "servicenow://"))] + incidents
                baseline = {}
                for uri in uris:
                    result = await probe.read_resource(uri)
                    baseline[uri] = _normal(result.contents[0].text)  # type: ignore[union-attr]
            report.uris = len(uris)
            report.rss.append((0, _rss(server.pid)))
            started = time.monotonic()
            claimed = 0

            async def one_client(index: int) -> None:
                nonlocal claimed
                async with Client(url, cache=None) as client:
                    position = index
                    while claimed < reads and time.monotonic() - started < max_seconds:
                        claimed += 1
                        uri = uris[position % len(uris)]
                        position += clients
                        try:
                            result = await client.read_resource(uri)
                        except MCPError as exc:
                            report.errors.append(f"{uri}: {exc.error.code} {exc.error.message[:200]}")
                        else:
                            content = result.contents[0]
                            if content.uri != uri:
                                report.mismatches.append(f"{uri}: answered for {content.uri}")
                            elif _normal(content.text) != baseline[uri]:  # type: ignore[union-attr]
                                report.mismatches.append(f"{uri}: content differs from the baseline")
                        report.reads += 1
                        if report.reads % sample_every == 0:
                            report.rss.append((report.reads, _rss(server.pid)))

            async with anyio.create_task_group() as tg:
                for index in range(clients):
                    tg.start_soon(one_client, index)
            report.seconds = time.monotonic() - started
            if report.rss[-1][0] != report.reads:
                report.rss.append((report.reads, _rss(server.pid)))
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            report.server_log = (folder / "server.log").read_text(errors="replace")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--sample-every", type=int, default=1000)
    parser.add_argument("--max-seconds", type=float, default=600)
    options = parser.parse_args()
    report = anyio.run(
        lambda: run_load(
            options.reads, options.clients, sample_every=options.sample_every, max_seconds=options.max_seconds
        )
    )
    print(json.dumps(report.summary(), indent=2))
    sys.exit(1 if report.errors or report.mismatches or report.reads < options.reads else 0)


if __name__ == "__main__":
    main()
