"""Issue 42 (build 11): the image installs what the docs' ways of running it need, at pinned
versions checked against their hashes. Read from the ``Dockerfile`` itself, and its install steps
run as written in a fresh folder and venv (no Docker on the test machines), then asked for traces
with the OTEL variables set, as a pod is."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
EXPORT = "uv export --frozen --no-dev --extra telemetry --no-emit-project --format requirements-txt"
"""How ``deploy/requirements.txt`` is made (its header says so too)."""


def _instructions(keyword: str) -> list[str]:
    return [line.removeprefix(keyword + " ") for line in DOCKERFILE.splitlines() if line.startswith(keyword + " ")]


def test_the_requirements_pin_every_declared_dependency_each_with_its_hashes() -> None:
    """``deploy/requirements.txt`` (made by :data:`EXPORT` from a lock, which is not kept in git)
    pins every runtime dependency ``pyproject.toml`` declares, the telemetry extra's too, at a version
    its specifier allows."""
    kept = (ROOT / "deploy/requirements.txt").read_text()
    pinned = {
        canonicalize_name(m[1]): Version(m[2]) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", kept, re.M)
    }
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["telemetry"]]]
    outside = [
        str(r) for r in declared
        if (r.marker is None or r.marker.evaluate())
        and ((version := pinned.get(canonicalize_name(r.name))) is None or version not in r.specifier)
    ]  # fmt: skip
    assert outside == [], f"deploy/requirements.txt is stale: run {EXPORT} -o deploy/requirements.txt"
    for text in (kept, (ROOT / "deploy/build-requirements.txt").read_text()):
        blocks = re.split(r"^(?=[A-Za-z0-9])", text, flags=re.MULTILINE)[1:]  # one per requirement
        assert blocks and all(re.match(r"[A-Za-z0-9_.-]+==[^\s;]+[ ;]", block) for block in blocks)  # pinned ==
        assert all("--hash=sha256:" in block for block in blocks)
    assert re.search(r"^opentelemetry-exporter-otlp-proto-http==", kept, re.MULTILINE)  # the telemetry extra
    runs = " ".join(_instructions("RUN"))
    assert "--require-hashes" in runs and "-r requirements.txt" in runs and "-r build-requirements.txt" in runs
    assert "--no-deps --no-build-isolation ." in runs  # the project adds no dependency of its own


@pytest.mark.slow
def test_the_images_install_steps_in_a_fresh_venv_give_a_server_that_traces_with_otel_set(tmp_path: Path) -> None:
    """The Dockerfile's COPY and RUN steps, as written, with /app a fresh folder (uv's cache makes it
    quick); then the OTEL variables that turn traces on, which made every pod exit 1 when the image
    lacked the telemetry extra."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH") if os.environ.get("CI") != "true" else pytest.fail("uv is not on PATH")
    app = tmp_path / "app"
    app.mkdir()
    for copy in _instructions("COPY"):
        if copy.startswith("--from="):
            continue
        *sources, target = shlex.split(copy)
        for source in sources:
            into = app / target if not target.endswith("/") else app / target / Path(source).name
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, into, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(ROOT / source, into if target != "./" else app / Path(source).name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_PROJECT"))}
    env.update(UV_LINK_MODE="hardlink", UV_PYTHON=sys.executable, UV_PYTHON_DOWNLOADS="never")
    for run in _instructions("RUN"):
        command = re.sub(r" && rm -rf [^&]*$", "", run).replace("/app/", f"{app}/")  # the cache is the machine's
        done = subprocess.run(["bash", "-c", command], cwd=app, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    otel = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SERVICE_NAME": "mcp-providers"}
    check = ("from mcp_providers._serve.steps.tracing import configure_from_env, shutdown\n"
             "assert configure_from_env(), 'traces are off'\nshutdown()\nprint('traces on')")  # fmt: skip
    python = app / ".venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", check], cwd=tmp_path, env=otel, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "traces on", done.stderr[-3000:]
    assert (app / ".venv" / "bin" / "mcp-providers").exists()  # the ENTRYPOINT's command
