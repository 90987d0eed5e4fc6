"""Issue 42 (build 11): the image installs what the docs' ways of running it need, at the pinned
versions. Read from the ``Dockerfile`` itself (no Docker on the test machines)."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sync_args() -> list[str]:
    runs = [line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("RUN uv sync")]
    assert len(runs) == 1, runs
    return shlex.split(runs[0].removeprefix("RUN ").split("&&")[0])


def test_the_image_installs_the_telemetry_extra_at_the_locked_versions() -> None:
    args = _sync_args()
    assert "--locked" in args  # uv.lock's versions, or the build fails
    extras = [args[i + 1] for i, a in enumerate(args) if a == "--extra"]
    assert "telemetry" in extras  # OTEL_EXPORTER_OTLP_ENDPOINT must not make the pod exit
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras) <= set(declared)
    copied = " ".join(re.findall(r"^COPY (.+)$", (ROOT / "Dockerfile").read_text(), re.MULTILINE))
    assert "uv.lock" in copied.split()  # --locked needs the lock file in the build
