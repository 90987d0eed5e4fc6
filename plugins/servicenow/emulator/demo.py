"""Demo instances: several emulators served until stopped, and the command-line entry point.

``python -m mcp_providers.plugins.servicenow.emulator [--port P]`` runs :func:`main`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mcp_providers.plugins.servicenow.emulator.app import Emulator

__all__ = ["DEMO_ENV", "demo_instances", "main", "serve_forever"]


def serve_forever(emulators: Mapping[str, Emulator], ready: Callable[[Mapping[str, str]], None] | None = None,
                  stop: threading.Event | None = None) -> None:  # fmt: skip
    """Start several emulators, report ``{instance: base_url}`` to ``ready``, and block until ``stop``.

    For demos: ``serve_forever({"dev": Emulator("dev", users=...)}, print)``.
    """
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(emu).base_url for name, emu in emulators.items()}
        if ready is not None:
            ready(urls)
        (stop or threading.Event()).wait()


DEMO_ENV = {"dev": "MCP_PROVIDERS_DEMO_SN_DEV_PASSWORD", "prod": "MCP_PROVIDERS_DEMO_SN_PROD_SECRET"}
"""Environment variables :func:`demo_instances` puts the demo credentials in."""


@contextlib.contextmanager
def demo_instances() -> Iterator[dict[str, Any]]:
    """Start emulated ``dev`` (Basic auth) and ``prod`` (OAuth client credentials) instances.

    Fresh random credentials are generated and exported in the variables named by
    :data:`DEMO_ENV` for as long as the context lasts (the previous values are restored after).

    :returns: (yields) the plugin's settings table, ``{"instances": [...]}``, naming those
        variables; it holds no secret.
    """
    password = secrets.token_urlsafe(18)
    client_secret = secrets.token_urlsafe(18)
    saved = {name: os.environ.get(name) for name in DEMO_ENV.values()}
    dev = Emulator("dev", users={"demo.integration": password})
    prod = Emulator("prod", oauth_clients={"mcp-providers-demo": client_secret})
    try:
        with dev, prod:
            os.environ[DEMO_ENV["dev"]] = password
            os.environ[DEMO_ENV["prod"]] = client_secret
            yield {"instances": [
                {"name": "dev", "url": dev.base_url, "description": "Emulated development instance",
                 "auth": {"type": "basic", "username": "demo.integration", "password_env": DEMO_ENV["dev"]}},
                {"name": "prod", "url": prod.base_url, "description": "Emulated production instance",
                 "auth": {"type": "oauth", "grant_type": "client_credentials", "client_id": "mcp-providers-demo",
                          "client_secret_env": DEMO_ENV["prod"]}},
            ]}  # fmt: skip
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> None:
    """``python -m mcp_providers.plugins.servicenow.emulator [--port P]``: serve ``dev`` on ``P``
    and ``prod`` on ``P + 1`` (ephemeral ports without ``--port``) until interrupted.

    Prints the instance URLs, the environment variables to export and a ``[plugins.servicenow]``
    config to paste; the credentials are random for each run and printed, since they guard
    nothing but this local emulator.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m mcp_providers.plugins.servicenow.emulator",
        description="Serve emulated ServiceNow instances dev and prod on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="port of dev (prod uses the next one); 0: ephemeral")
    args = parser.parse_args(argv)
    password, client_secret = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
    emulators = {
        "dev": Emulator("dev", users={"emulator.user": password}, port=args.port),
        "prod": Emulator("prod", oauth_clients={"emulator-client": client_secret},
                         port=args.port + 1 if args.port else 0),
    }  # fmt: skip

    def ready(urls: Mapping[str, str]) -> None:
        print("\n".join(f"{name}: {url}" for name, url in urls.items()))
        print(f"\nexport SN_EMULATOR_DEV_PASSWORD={password}\nexport SN_EMULATOR_PROD_SECRET={client_secret}\n")
        print(f"""[[plugins.servicenow.instances]]
name = "dev"
url = "{urls['dev']}"
auth = {{ type = "basic", username = "emulator.user", password_env = "SN_EMULATOR_DEV_PASSWORD" }}

[[plugins.servicenow.instances]]
name = "prod"
url = "{urls['prod']}"
[plugins.servicenow.instances.auth]
type = "oauth"
client_id = "emulator-client"
client_secret_env = "SN_EMULATOR_PROD_SECRET"
""", flush=True)  # fmt: skip

    with contextlib.suppress(KeyboardInterrupt):
        serve_forever(emulators, ready, stop)
