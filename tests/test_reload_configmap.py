"""``serve --watch`` sees a Kubernetes ConfigMap update (the Helm chart's way of rolling a config
change out, deploy/helm/mcp-providers).

A ConfigMap volume is written by the kubelet's atomic writer (kubernetes
``pkg/volume/util/atomic_writer.go``): the data lives in a timestamped folder ``..<stamp>``,
``..data`` is a symlink to it, and each key (``config.toml``) is a symlink ``..data/config.toml``.
An update writes a new timestamped folder, points a new symlink ``..data_tmp`` at it, renames it
over ``..data`` (one atomic step) and removes the old folder. The path ``config.toml`` itself is
never written, created or removed, so a watch that looks only for events on that path misses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from serve_support import serve_process
from waiting import wait_until

from mcp_providers._serve.reload import config_digest
from mcp_providers.config import load_config

KEY = "config.toml"


def _mount(folder: Path, text: str, stamp: str) -> Path:
    """Lay ``folder`` out as the kubelet mounts a ConfigMap with one key; returns the key's path."""
    (folder / f"..{stamp}").mkdir(parents=True)
    (folder / f"..{stamp}" / KEY).write_text(text)
    (folder / "..data").symlink_to(f"..{stamp}")
    (folder / KEY).symlink_to(f"..data/{KEY}")
    return folder / KEY


def _update(folder: Path, text: str, stamp: str) -> None:
    """Update the mounted ConfigMap as the kubelet does: new folder, ``..data_tmp``, rename, remove."""
    old = os.readlink(folder / "..data")
    (folder / f"..{stamp}").mkdir()
    (folder / f"..{stamp}" / KEY).write_text(text)
    (folder / "..data_tmp").symlink_to(f"..{stamp}")
    os.replace(folder / "..data_tmp", folder / "..data")
    shutil.rmtree(folder / old)


def _readyz(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/readyz", timeout=5) as answer:
        body: dict[str, Any] = json.loads(answer.read())
        return body


@contextlib.contextmanager
def _watching(config: Path, log: Path) -> Iterator[str]:
    """``serve --http --watch`` on ``config`` (through ``$MCP_PROVIDERS_CONFIG``, as the chart sets
    it); yields its base URL once ``/readyz`` answers 200."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["MCP_PROVIDERS_CONFIG"] = str(config)
    with serve_process(env, log, "--watch") as (base, _):  # ready: /readyz answers 200
        yield base


def _until(base: str, done: Any, what: str) -> dict[str, Any]:
    """``/readyz`` once ``done(/readyz)`` holds: the event, not a deadline (round 4 item 25)."""
    ready: dict[str, Any] = {}

    def seen() -> dict[str, Any] | None:
        ready.update(_readyz(base))
        return dict(ready) if done(ready) else None

    return wait_until(seen, what, every=0.1)


def test_watch_reloads_when_the_kubelet_swaps_the_configmap(tmp_path: Path) -> None:
    folder = tmp_path / "etc-mcp-providers"
    config = _mount(folder, "[server]\npage_size = 50\n", "2026_12_01_10_00_00.000000001")
    with _watching(config, tmp_path / "serve.log") as base:
        first = _readyz(base)["config_digest"]
        # The watcher starts beside the server; until it is watching an update can pass unseen, so
        # updates go on (each with its own content) until one is seen; then the last one written
        # must be the one served.
        n = 0

        def seen() -> bool:
            nonlocal n
            if _readyz(base)["config_digest"] != first:
                return True
            assert n < 99, "no ConfigMap update seen by serve --watch after 99 updates"  # names _update's 2 digits
            n += 1
            _update(folder, f"[server]\npage_size = {60 + n}\n", f"2026_12_01_10_00_{n:02d}.000000001")
            return False

        wait_until(seen, "serve --watch saw a ConfigMap update", every=0.5)
        served = _until(base, lambda r: r["config_digest"] == _digest(config), "the last update")
        assert served["last_reload"]["outcome"] == "applied"
        assert served["last_reload"]["trigger"] == "file"
        # Another file changing in the folder reloads nothing; the half second lets a wrong reload
        # happen before the next update, so it would be counted apart.
        before = _readyz(base)
        (folder / "notes.txt").write_text("not the config")
        time.sleep(0.5)
        # A later update is seen too: the watch follows the new ..data, not the removed folder.
        _update(folder, "[server]\npage_size = 99\n", "2026_12_01_10_01_00.000000001")
        after = _until(base, lambda r: r["config_digest"] == _digest(config), "the second update")
        assert after["last_reload"]["outcome"] == "applied"
        # One reload for the update and none for notes.txt (which would be "unchanged" or, for
        # plugins composed anew, one more generation).
        assert after["generation"] == before["generation"] + 1
        assert _reloads(base, "unchanged") == 0 and _reloads(base, "failed") == 0


def _digest(config: Path) -> str:
    """The digest ``/readyz`` shows when ``config`` (as it is now) is served."""
    return config_digest(load_config(config, environ={}))


def _reloads(base: str, outcome: str) -> float:
    """``mcp_providers_reload_total{outcome}`` from ``/metrics`` (0 when the series is absent)."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    series = f'mcp_providers_reload_total{{outcome="{outcome}"}} '
    return sum(float(line[len(series) :]) for line in text.splitlines() if line.startswith(series))
