"""Check the Helm chart ``deploy/helm/mcp-providers``: lint it, render it, validate what it renders.

    uv run python scripts/helm_chart.py     # the defaults and every values file in the chart's ci/

Helm does the linting and rendering: ``helm-python-sdk`` (a dev dependency) is Helm's own Go SDK
(v4) built as a library, so ``helm lint --strict`` and ``helm template`` run without a ``helm``
binary. Every rendered object is validated against the Kubernetes JSON schemas of each version in
``KUBE_VERSIONS`` with ``kubernetes-validate`` (strict: an unknown field fails; the package ships the
schemas, nothing is fetched). The ServiceMonitor, a prometheus-operator custom resource those
schemas lack, is validated with node against ``@kubernetes-models/prometheus-operator`` (pinned by
``scripts/helm_schemas/package-lock.json``, installed by ``npm ci`` into ``.cache/``). The
``config.toml`` the chart writes must load with the server's own config model.

Exit status 0 when every check passes, 1 otherwise (each problem printed). ``tests/test_helm_chart.py``
imports the functions.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "deploy" / "helm" / "mcp-providers"
SCHEMAS = Path(__file__).resolve().parent / "helm_schemas"
CACHE = ROOT / ".cache" / "helm-schemas"
KUBE_VERSIONS = ("1.25.0", "1.37.0")
"""The oldest version the chart supports (``kubeVersion`` in Chart.yaml) and the newest schemas."""
CUSTOM = {"monitoring.coreos.com/v1"}
"""API groups validated by ``helm_schemas/validate.mjs`` instead of the Kubernetes schemas."""
INSTALL_SECONDS = 300


class ChartError(Exception):
    """The chart could not be rendered with these values (a template's ``fail``, bad YAML)."""


def values_files() -> list[Path]:
    """The values files the chart is checked with besides its defaults: ``ci/*-values.yaml``."""
    return sorted((CHART / "ci").glob("*-values.yaml"))


def lint(values: dict[str, Any] | None = None, chart: Path = CHART) -> list[str]:
    """``helm lint --strict`` of ``chart`` with ``values``: its warnings and errors, one line each
    (informational notes such as "icon is recommended" are left out)."""
    report = helm_python.lint(str(chart), values or {}, strict=True)
    found = [f"{m['path']}: {m['error']}" for m in report.get("messages", []) if m.get("severity", 0) >= 2]
    return found + [str(e) for e in report.get("errors", [])]


def render(
    values: dict[str, Any] | None = None, *, name: str = "mcp", namespace: str = "default", chart: Path = CHART
) -> list[dict[str, Any]]:
    """``helm template`` of ``chart``: the Kubernetes objects it renders, in file order.

    :raises ChartError: a template failed (its ``fail`` message is in the error) or rendered
        something that is not YAML.
    """
    try:
        manifests = helm_python.Chart.load(str(chart)).render(values or {}, name=name, namespace=namespace,
                                                              is_install=True)  # fmt: skip
    except helm_python.HelmError as exc:
        raise ChartError(str(exc)) from exc
    objects: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if not path.endswith((".yaml", ".yml")):
            continue  # NOTES.txt
        try:
            objects += [doc for doc in yaml.safe_load_all(text) if doc]
        except yaml.YAMLError as exc:
            raise ChartError(f"{path} is not YAML: {exc}") from exc
    return objects


def validate(objects: list[dict[str, Any]]) -> list[str]:
    """Problems of the rendered ``objects`` against their schemas and the server's config model."""
    problems: list[str] = []
    custom = [o for o in objects if o.get("apiVersion") in CUSTOM]
    for version in KUBE_VERSIONS:
        for obj in objects:
            if obj not in custom:
                problems += _kubernetes_problems(obj, version)
    if custom:
        problems += custom_problems(custom)
    return problems + config_problems(objects)


def _kubernetes_problems(obj: dict[str, Any], version: str) -> list[str]:
    where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path)
        return [f"{where} against Kubernetes {version}: {path}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"{where}: Kubernetes {version} has no {obj.get('apiVersion')} {obj.get('kind')}"]
    return []


def custom_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Problems of prometheus-operator objects, from ``helm_schemas/validate.mjs`` under node."""
    node = shutil.which("node")
    if node is None:
        return ["node is not installed: the ServiceMonitor cannot be validated (Debian: apt-get install -y nodejs npm)"]
    folder = install_schemas()
    done = subprocess.run([node, str(folder / "validate.mjs")], input=json.dumps(objects), cwd=folder,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    if done.returncode != 0:
        return [f"validate.mjs failed: {done.stderr.strip()[-400:]}"]
    found: list[str] = json.loads(done.stdout)
    return found


def install_schemas() -> Path:
    """``npm ci`` of ``helm_schemas/`` into ``.cache/helm-schemas`` when its lock changed; the folder.

    :raises RuntimeError: npm is missing or the install failed (saying why).
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / "helm-schemas.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # pytest workers and CI may install at once
        lockfile = (SCHEMAS / "package-lock.json").read_text()
        stamp = CACHE / "installed-lock.json"
        if not stamp.is_file() or stamp.read_text() != lockfile or not (CACHE / "node_modules").is_dir():
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError("npm is not installed (Debian: apt-get install -y npm): it installs the "
                                   "ServiceMonitor schema")  # fmt: skip
            for name in ("package.json", "package-lock.json"):
                shutil.copy(SCHEMAS / name, CACHE / name)
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=CACHE,
                                  capture_output=True, text=True, timeout=INSTALL_SECONDS)  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"npm ci in {CACHE} failed: {done.stderr.strip()[-400:]}")
            stamp.write_text(lockfile)
        shutil.copy(SCHEMAS / "validate.mjs", CACHE / "validate.mjs")
    return CACHE


def config_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Problems of the ``config.toml`` in the chart's ConfigMap, loaded as the server loads it."""
    from mcp_providers.config import load_config
    from mcp_providers.errors import ConfigError

    problems = []
    for obj in objects:
        text = obj.get("data", {}).get("config.toml") if obj.get("kind") == "ConfigMap" else None
        if text is None:
            continue
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "config.toml"
            path.write_text(text)
            try:
                load_config(path, environ={})
            except ConfigError as exc:
                problems.append(f"ConfigMap/{obj['metadata']['name']} config.toml: {exc}")
    return problems


def check(values_file: Path | None) -> list[str]:
    """Every problem of the chart with ``values_file`` (``None``: the defaults)."""
    values = yaml.safe_load(values_file.read_text()) if values_file else {}
    try:
        return lint(values) + validate(render(values))
    except (ChartError, RuntimeError) as exc:
        return [str(exc)]


def main() -> int:
    failed = False
    for values_file in [None, *values_files()]:
        name = values_file.relative_to(CHART).as_posix() if values_file else "default values"
        problems = check(values_file)
        failed = failed or bool(problems)
        print(f"helm chart, {name}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
        for problem in problems:
            print(f"  {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
