"""Issue 24 item 19 / Must show 3: under ``CI=true`` a missing real part fails the run, never skips.

Each case runs a real pytest (a subprocess, in a folder of its own) with the rule of
``tests/real_parts.py`` loaded as a plugin, as ``tests/conftest.py`` loads it for the suite; and
``.ci/run`` is run with a ``PATH`` that lacks the parts it must install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

IN_A_TEST = {
    "require_tool": "from real_parts import require_tool\n\ndef test_it():\n"
                    "    require_tool('no-such-tool-4f2a', 'apt-get install -y no-such-tool-4f2a')\n",
    "missing": "from real_parts import missing\n\ndef test_it():\n"
               "    missing('cannot install @scope/client from npm')\n",
    "pytest_skip": "import pytest\n\ndef test_it():\n    pytest.skip('redis-server is not installed')\n",
    "skipif": "import pytest\n\n@pytest.mark.skipif(True, reason='node is not installed')\ndef test_it():\n    pass\n",
    "skip_in_fixture": "import pytest\n\n@pytest.fixture\ndef nginx():\n    pytest.skip('nginx is not installed')\n\n"
                       "def test_it(nginx):\n    pass\n",
}  # fmt: skip
WHILE_COLLECTED = {
    "importorskip": "import pytest\n\nnot_there = pytest.importorskip('no_such_module_4f2a')\n\n"
                    "def test_it():\n    pass\n",
    "module_skip": "import pytest\n\npytest.skip('npm is absent', allow_module_level=True)\n\n"
                   "def test_it():\n    pass\n",
}  # fmt: skip


def _pytest(folder: Path, cases: dict[str, str], ci: str | None) -> subprocess.CompletedProcess[str]:
    """pytest with the rule as a plugin on ``test_<case>.py`` files made from ``cases``."""
    folder.mkdir()
    for name, source in cases.items():
        (folder / f"test_{name}.py").write_text(source)
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "real_parts", "-p", "no:cacheprovider", "-q", "-rA", str(folder)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _outcomes(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """``{case: PASSED | FAILED | ERROR | SKIPPED | ...}`` from the ``-rA`` summary."""
    outcomes = {}
    for line in result.stdout.splitlines():
        word, _, rest = line.partition(" ")
        for case in (*IN_A_TEST, *WHILE_COLLECTED):
            if f"test_{case}.py" in rest and word in {"PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL"}:
                outcomes.setdefault(case, word)
    return outcomes


def test_under_ci_every_skip_in_a_test_fails_with_its_reason(tmp_path: Path) -> None:
    result = _pytest(tmp_path / "ci", IN_A_TEST, "true")
    assert result.returncode == 1, result.stdout + result.stderr
    outcomes = _outcomes(result)
    assert set(outcomes) == set(IN_A_TEST), result.stdout
    assert set(outcomes.values()) <= {"FAILED", "ERROR"}, result.stdout  # a failed setup is an ERROR
    for reason in ("no-such-tool-4f2a", "@scope/client", "redis-server", "node", "nginx"):
        assert reason in result.stdout
    assert "skipped" not in result.stdout.splitlines()[-1]


@pytest.mark.parametrize("case", list(WHILE_COLLECTED))
def test_under_ci_a_module_skipped_while_collected_fails_the_run(tmp_path: Path, case: str) -> None:
    result = _pytest(tmp_path / "ci", {case: WHILE_COLLECTED[case]}, "true")
    assert result.returncode not in (0, 5), result.stdout + result.stderr
    assert _outcomes(result) == {case: "ERROR"} and "skipped under CI=true" in result.stdout, result.stdout


def test_outside_ci_every_missing_part_skips(tmp_path: Path) -> None:
    result = _pytest(tmp_path / "here", {**IN_A_TEST, **WHILE_COLLECTED}, "false")
    assert result.returncode == 0, result.stdout + result.stderr
    count = len(IN_A_TEST) + len(WHILE_COLLECTED)
    assert result.stdout.splitlines()[-1].startswith(f"{count} skipped in"), result.stdout
    for reason in ("no-such-tool-4f2a", "@scope/client", "redis-server", "node", "nginx", "npm", "no_such_module"):
        assert reason in result.stdout


@pytest.mark.parametrize(
    ("value", "ci"),
    [("true", True), ("1", True), ("TRUE", True), ("yes", True), (" true ", True),
     (None, False), ("", False), ("false", False), ("0", False), ("no", False)],
)  # fmt: skip
def test_what_counts_as_ci(monkeypatch: pytest.MonkeyPatch, value: str | None, ci: bool) -> None:
    from real_parts import in_ci

    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert in_ci() is ci


def test_an_expected_failure_is_not_a_skip(tmp_path: Path) -> None:
    xfail = {"missing": "import pytest\n\n@pytest.mark.xfail(reason='known')\ndef test_it():\n    assert False\n"}
    result = _pytest(tmp_path / "ci", xfail, "true")
    assert result.returncode == 0 and "xfailed" in result.stdout, result.stdout


def _ci_run(tmp_path: Path, apt_get: str | None) -> subprocess.CompletedProcess[str]:
    """``.ci/run`` with a ``PATH`` holding only what runs before its install step (bash, coreutils it
    calls, uv) and, if given, an ``apt-get`` script: no redis-server, node or npm."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("bash", "dirname", "id", "uv", "cat", "env"):
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_ / tool).symlink_to(found)
    if apt_get is not None:
        (bin_ / "apt-get").write_text(f"#!{shutil.which('bash')}\n{apt_get}\n")
        (bin_ / "apt-get").chmod(0o755)
    env = {"PATH": str(bin_), "HOME": str(tmp_path), "CI": "true"}
    return subprocess.run([shutil.which("bash") or "bash", str(ROOT / ".ci" / "run")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.parametrize(
    ("apt_get", "says"),
    [
        (None, "no apt-get to install them"),
        ("echo 'E: Unable to locate package' >&2; exit 100", "could not install"),
        ("exit 0", "still missing after apt-get"),  # apt-get "succeeds" without installing anything
    ],
    ids=["no-apt-get", "apt-get-fails", "apt-get-installs-nothing"],
)
def test_ci_run_fails_when_a_real_part_cannot_be_installed(tmp_path: Path, apt_get: str | None, says: str) -> None:
    result = _ci_run(tmp_path, apt_get)
    assert result.returncode == 1, result.stdout + result.stderr
    assert says in result.stderr, result.stderr
    for part in ("redis-server", "node", "npm"):
        assert part in result.stderr, result.stderr
    assert "skip" not in result.stderr
    assert "ruff" not in result.stdout + result.stderr  # it stopped before the linters and tests


def test_ci_run_says_what_it_would_install(tmp_path: Path) -> None:
    log = tmp_path / "apt.log"
    result = _ci_run(tmp_path, f'echo "$@" >> {json.dumps(str(log))}; [ "$1" = update ] || exit 100')
    assert result.returncode == 1
    asked = log.read_text()
    assert "install" in asked and all(p in asked for p in ("redis-server", "nodejs", "npm")), asked


def _ci_run_with_stubs(tmp_path: Path, pytest_status: int) -> subprocess.CompletedProcess[str]:
    """A copy of ``.ci/run`` in a tree whose every tool is a stub that succeeds, except ``uv run pytest``
    (exits ``pytest_status``): what the script itself does with each stage's outcome."""
    tree, bin_ = tmp_path / "tree", tmp_path / "bin"
    (tree / ".ci").mkdir(parents=True)
    (tree / "scripts").mkdir()
    bin_.mkdir()
    shutil.copy(ROOT / ".ci" / "run", tree / ".ci" / "run")
    bash = shutil.which("bash") or "/bin/bash"
    stubs = {
        tree / "scripts" / "conformance": "exit 0",
        tree / "scripts" / "sdk_drift": "exit 0",
        bin_ / "uv": f'case " $* " in *" pytest "*) exit {pytest_status} ;; esac; exit 0',
    }
    parts = ("redis-server", "nginx", "node", "npm", "openssl", "rsyslogd", "chromium", "chromedriver", "promtool")
    stubs |= {bin_ / part: "exit 0" for part in parts}
    for path, body in stubs.items():
        path.write_text(f"#!{bash}\n{body}\n")
        path.chmod(0o755)
    for tool in ("bash", "dirname", "id", "cat", "env"):
        (bin_ / tool).symlink_to(shutil.which(tool) or tool)
    env = {"PATH": str(bin_), "HOME": str(tmp_path)}
    return subprocess.run([bash, str(tree / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)


STAGES = ["install (uv sync)", "ruff", "mypy", "import contracts", "helm chart", "docs site", "conformance",
          "sdk drift (never fails)", "guard mutants", "tests (uv run pytest)"]  # fmt: skip


def test_ci_run_prints_each_stage_with_its_outcome_and_time(tmp_path: Path) -> None:
    result = _ci_run_with_stubs(tmp_path, 0)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for name in STAGES:
        assert f"ci: ---- {name}" in lines, result.stdout
        assert any(line.startswith(f"ci: ---- {name}: ok in ") and line.endswith(" s") for line in lines), result.stdout
    assert any(line.startswith("ci: all stages in ") for line in lines), result.stdout


@pytest.mark.parametrize(("status", "says"), [(5, "pytest collected no tests"), (1, "FAILED (exit 1)")])
def test_ci_run_fails_when_pytest_fails_or_runs_no_test(tmp_path: Path, status: int, says: str) -> None:
    result = _ci_run_with_stubs(tmp_path, status)
    assert result.returncode != 0, result.stdout + result.stderr
    assert says in result.stderr, result.stderr


def test_ci_run_installs_each_command_from_its_debian_package() -> None:
    """``package_of`` maps the commands ``.ci/run`` looks for to the packages apt-get installs."""
    import re

    text = (ROOT / ".ci" / "run").read_text()
    functions = re.search(r"^package_of\(\) \{.*?^\}", text, re.S | re.M)
    parts = re.search(r"^    for part in ([^;]+); do", text, re.M)
    assert functions is not None and parts is not None
    script = functions[0] + '\nfor c in "$@"; do package_of "$c"; done'
    names = parts[1].split()
    out = subprocess.run(["bash", "-c", script, "-", *names], capture_output=True, text=True, check=True).stdout.split()
    assert dict(zip(names, out, strict=True)) == {
        "redis-server": "redis-server", "nginx": "nginx", "node": "nodejs", "npm": "npm", "openssl": "openssl",
        "rsyslogd": "rsyslog", "chromium": "chromium", "chromedriver": "chromium-driver", "promtool": "prometheus",
    }  # fmt: skip


def test_installed_once_installs_for_a_new_key_only_and_again_after_a_failed_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from real_parts import CACHE_VARIABLE, STAMP, installed_once, user_cache

    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    assert user_cache() == tmp_path / "cache"
    runs: list[str] = []

    def install(folder: Path) -> None:
        runs.append(folder.name)
        (folder / "node_modules").mkdir(exist_ok=True)

    folder = installed_once("pkg", "pkg@1.0.0", install)
    assert folder == tmp_path / "cache" / "pkg" and (folder / STAMP).read_text() == "pkg@1.0.0"
    installed_once("pkg", "pkg@1.0.0", install)
    assert runs == ["pkg"]  # the same key: nothing installed again
    installed_once("pkg", "pkg@1.0.1", install)
    assert runs == ["pkg", "pkg"]  # another pin: installed again

    def broken(folder: Path) -> None:
        runs.append("broken")
        raise RuntimeError("the registry is unreachable")

    with pytest.raises(RuntimeError):
        installed_once("pkg", "pkg@2.0.0", broken)
    assert not (folder / STAMP).exists()  # no stamp for an install cut short
    installed_once("pkg", "pkg@2.0.0", install)
    assert runs == ["pkg", "pkg", "broken", "pkg"]
