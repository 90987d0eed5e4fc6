"""Compatibility between the core and third-party plugins (issue 25).

Three real distributions, installed into temp folders like any plugin (``tests/distributions/``):

- ``mcp-providers-ancient`` 0.3 requires ``mcp-providers<0.1``; its module raises on import, so a
  test that sees anything but "made for another core" has caught discovery importing it;
- ``mcp-providers-weather`` 0.2 fits this core (its other requirements on the core apply only on
  Python 2 or with an extra nobody installed); ``required_plugins`` asks for it;
- ``mcp-providers-eras`` holds plugins pinned to the earlier ``authorize`` signatures.

``ancient`` and the ``eras`` plugins are declared in the ``mcp_providers.policy`` group (policy
plugins, round 4 item 22), so ``ancient`` fails closed; a provider plugin made for another core is
left out instead (``test_plugin_groups.py``).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import SERVED, no_serving, run_cli
from mcp import MCPError
from packaging.version import Version
from reliability_support import install_target

from mcp_providers import Config, MCPProvidersRemovedIn1Warning, compose, hookspecs, load_config
from mcp_providers._host.compat import core_requirement_problem, plugin_distributions, unmet_requirements
from mcp_providers.errors import ConfigError
from mcp_providers.testing import connect

DISTRIBUTIONS = Path(__file__).parent / "distributions"
SOURCES = ("compat_ancient", "compat_weather", "compat_eras")
MODULES = ("mcp_providers_ancient", "mcp_providers_weather", "mcp_providers_eras")
CORE = importlib.metadata.version("mcp-providers")  # the running core, whatever this checkout's version is
ANCIENT = (
    f"made for another core: mcp-providers-ancient 0.3 requires mcp-providers<0.1; this core is {CORE} "
    f"(install a release of mcp-providers-ancient made for mcp-providers {CORE}, or a core it supports)"
)


@pytest.fixture(scope="session")
def compat_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    sites = {}
    for source in SOURCES:
        sites[source] = tmp_path_factory.mktemp(f"site-{source}")
        install_target(DISTRIBUTIONS / source, sites[source])
    return sites


@pytest.fixture
def on_path(compat_sites: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """Every compat distribution on sys.path (in-process); their modules forgotten afterwards."""
    for key in [k for k in os.environ if k.startswith("MCP_PROVIDERS_")]:
        monkeypatch.delenv(key)
    for site in compat_sites.values():
        monkeypatch.syspath_prepend(str(site))
    yield compat_sites
    _forget_modules()


def _forget_modules() -> None:
    """Drop the compat distributions' modules, so the next test imports them from its own sites."""
    for name in [m for m in sys.modules if m.startswith(MODULES)]:
        del sys.modules[name]


def _record(composition: object, name: str) -> object:
    return next(r for r in composition.records if r.name == name)  # type: ignore[attr-defined]


def _cli(
    monkeypatch: pytest.MonkeyPatch, sites: list[Path], tmp_path: Path, config: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``mcp-providers ARGS -c CONFIG`` in this process with ``sites`` on ``sys.path``; a ``serve``
    that passes its checks exits :data:`SERVED` where it would start serving."""
    path = tmp_path / "mcp-providers.toml"
    path.write_text(config)
    for site in sites:
        monkeypatch.syspath_prepend(str(site))
    no_serving(monkeypatch)
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("MCP_PROVIDERS_")}
    try:
        return run_cli(*args, "-c", str(path), env=unset)
    finally:
        _forget_modules()


# -- the core version a plugin's distribution requires ------------------------------------------------


def test_a_plugin_made_for_another_core_is_rejected_unimported_naming_both_versions(on_path: dict[str, Path]) -> None:
    composition = compose(Config())
    ancient = _record(composition, "ancient")
    assert (ancient.status, ancient.reason) == ("rejected", ANCIENT)  # type: ignore[attr-defined]
    assert "mcp_providers_ancient" not in sys.modules
    # The rest load, the one whose other requirements on the core do not apply here included.
    assert _record(composition, "weather").status == "loaded"  # type: ignore[attr-defined]
    assert f"ancient: rejected: {ANCIENT}" in composition.failures


def test_a_plugin_made_for_another_core_fails_closed_unimported_while_configured(on_path: dict[str, Path]) -> None:
    # Configured but denied: a policy plugin (declared in mcp_providers.policy) is known as one without
    # being imported, so serving refuses.
    composition = compose(Config(deny=("ancient",), plugins={"ancient": {}}))
    ancient = _record(composition, "ancient")
    assert ancient.status == "disabled"  # type: ignore[attr-defined]
    assert "mcp_providers_ancient" not in sys.modules
    assert ancient.authorize_evidence == "it is declared in the mcp_providers.policy entry-point group"  # type: ignore[attr-defined]
    assert [line for line in composition.policy_failures if line.startswith("ancient: ")]


def test_plugins_shows_it_rejected_serve_refuses_until_it_is_denied(
    compat_sites: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    sites = list(compat_sites.values())
    capfd.readouterr()
    listed = _cli(monkeypatch, sites, tmp_path, "", "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    document = capfd.readouterr().out  # --json writes to file descriptor 1 itself, past sys.stdout
    rows = {row["name"]: row for row in json.loads(document)["plugins"]}
    assert (rows["ancient"]["status"], rows["ancient"]["reason"]) == ("rejected", ANCIENT)
    assert "was imported" not in listed.stderr

    refused = _cli(monkeypatch, sites, tmp_path, "", "serve")
    assert refused.returncode == 1
    assert "ancient: policy plugin rejected (made for another core: mcp-providers-ancient 0.3" in refused.stderr
    assert "deny = ['ancient']" in refused.stderr

    served = _cli(monkeypatch, sites, tmp_path, 'deny = ["ancient"]\n', "serve")
    assert served.returncode == SERVED, served.stderr


def test_pre_releases_of_the_core_compare_by_pep_440(on_path: dict[str, Path]) -> None:
    eras = importlib.metadata.distribution("mcp-providers-eras")  # requires mcp-providers>=0.1
    assert core_requirement_problem(eras, Version("0.2.0.dev1")) is None  # a pre-release past 0.1 fits
    assert core_requirement_problem(eras, Version("0.1.0rc1")) == (
        "mcp-providers-eras 0.1.0 requires mcp-providers>=0.1; this core is 0.1.0rc1 "
        "(install a release of mcp-providers-eras made for mcp-providers 0.1.0rc1, or a core it supports)"
    )
    # A core whose own metadata is missing (a bare source tree) checks nothing rather than guess.
    ancient = importlib.metadata.distribution("mcp-providers-ancient")
    assert core_requirement_problem(ancient, None) is None
    assert core_requirement_problem(ancient, Version(CORE)) == ANCIENT.removeprefix("made for another core: ")


# -- required_plugins ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        pytest.param(
            "mcp-providers-weather>=0.3",
            "required_plugins: mcp-providers-weather>=0.3 is not met: mcp-providers-weather 0.2 is installed; "
            "install a version matching >=0.3",
            id="too old",
        ),
        pytest.param(
            "mcp-providers-absent>=1",
            "required_plugins: mcp-providers-absent>=1 is not met: mcp-providers-absent is not installed "
            "(installed plugin distributions: ",
            id="missing",
        ),
    ],
)
@pytest.mark.parametrize("verb", ["check", "serve"])
def test_required_plugins_refuses_a_plugin_too_old_or_missing(
    compat_sites: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    requirement: str,
    message: str,
) -> None:
    sites = [compat_sites["compat_weather"]]
    run = _cli(monkeypatch, sites, tmp_path, f"required_plugins = [{requirement!r}]\n", verb)
    assert run.returncode == 1, run.stdout + run.stderr
    assert message in run.stdout + run.stderr
    if verb == "serve":
        assert "refusing to serve: required_plugins not met:" in run.stderr


def test_required_plugins_met_serves(
    compat_sites: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = 'required_plugins = ["mcp-providers-weather>=0.2", "mcp-providers-absent; python_version < \'3\'"]\n'
    run = _cli(monkeypatch, [compat_sites["compat_weather"]], tmp_path, config, "serve")
    assert run.returncode == SERVED, run.stderr


def test_required_plugins_names_plugin_distributions_only(on_path: dict[str, Path]) -> None:
    # pytest is installed but declares no mcp_providers entry point: it is no plugin distribution.
    installed = plugin_distributions()
    assert "mcp-providers-weather" in installed and "pytest" not in installed
    assert unmet_requirements(["pytest"], installed)[0].startswith(
        "required_plugins: pytest is not met: pytest is not installed"
    )
    # Names compare canonically (PEP 503), as pip and pytest compare them.
    assert unmet_requirements(["MCP_Providers.Weather>=0.2"], installed) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("weather!!", "'weather!!' is not a requirement"),
        ("mcp-providers-weather[legacy]>=0.2", "has extras; name the plugin's distribution and versions only"),
        ("mcp-providers-weather @ https://example.com/w.whl", "has a URL"),
    ],
)
def test_a_required_plugins_entry_that_is_no_version_requirement_is_a_config_error(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(f"required_plugins = [{entry!r}]\n")
    with pytest.raises(ConfigError, match=r"config\.required_plugins") as raised:
        load_config(path, environ={})
    assert message in str(raised.value)


# -- deprecated hook arguments ------------------------------------------------------------------------

DEPRECATION = "authorize(subject) is deprecated: name principal and read principal.subject"


@pytest.fixture
def subject_deprecated(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deprecation of ``authorize``'s ``subject``, declared the way the core declares one."""
    warning = MCPProvidersRemovedIn1Warning(DEPRECATION)
    monkeypatch.setitem(hookspecs.DEPRECATED_ARGUMENTS["authorize"], "subject", warning)


def test_a_plugin_using_a_deprecated_argument_loads_with_the_named_warning(
    on_path: dict[str, Path], subject_deprecated: None
) -> None:
    with pytest.warns(MCPProvidersRemovedIn1Warning, match=r"authorize\(subject\) is deprecated") as caught:
        composition = compose(Config(allow=("era_first", "policy")))
    module = Path(sys.modules["mcp_providers_eras"].__file__ or "")
    era = _record(composition, "era_first")
    assert era.status == "loaded"  # type: ignore[attr-defined]
    # Aimed at the plugin's own hookimpl (pluggy's warn_explicit), kept for check and serve to print.
    assert [Path(w.filename) for w in caught.list] == [module]
    assert era.deprecations == [f"{DEPRECATION} ({module}:{caught.list[0].lineno})"]  # type: ignore[attr-defined]
    assert _record(composition, "policy").deprecations == []  # type: ignore[attr-defined]


def test_a_deprecated_argument_under_an_error_filter_rejects_the_plugin(
    on_path: dict[str, Path], subject_deprecated: None
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MCPProvidersRemovedIn1Warning)
        composition = compose(Config(allow=("era_first", "policy")))
    era = _record(composition, "era_first")
    assert era.status == "rejected"  # type: ignore[attr-defined]
    assert era.reason == (  # type: ignore[attr-defined]
        "uses a deprecated part of the hook contract and warnings are errors here: "
        f"MCPProvidersRemovedIn1Warning: {DEPRECATION}"
    )


def test_check_prints_each_deprecation_as_a_warning(
    on_path: dict[str, Path], subject_deprecated: None, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from mcp_providers.cli import app

    config = tmp_path / "mcp-providers.toml"
    config.write_text('allow = ["era_first"]\n')
    with pytest.warns(MCPProvidersRemovedIn1Warning):
        run = CliRunner().invoke(app, ["check", "-c", str(config)])
    assert f"warning: era_first: {DEPRECATION} (" in run.output
    assert run.exit_code == 0, run.output  # a deprecation warns; it does not fail the check


# -- earlier hook signatures keep loading ------------------------------------------------------------

DENY_OPEN = {
    "rules": [{"effect": "deny", "actions": ["read"], "targets": ["first://open", "settings://open"]}],
}


@pytest.mark.anyio
async def test_plugins_pinned_to_each_earlier_authorize_signature_keep_loading(on_path: dict[str, Path]) -> None:
    config = Config(allow=("era_first", "era_settings", "policy"), plugins={"policy": DENY_OPEN})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing they use is deprecated today
        composition = compose(config)
    for name in ("era_first", "era_settings"):
        record = _record(composition, name)
        assert (record.status, record.hooks) == ("loaded", ["authorize", "register_resource_providers"])  # type: ignore[attr-defined]
    async with connect(composition) as client:
        for prefix in ("first://", "settings://"):
            # Written for firstresult, when its allow ended the chain: now the policy's deny wins.
            with pytest.raises(MCPError, match="policy rule 1"):
                await client.read_resource(f"{prefix}open")
            # Its own deny is still asked and still denies.
            with pytest.raises(MCPError, match=f"{prefix} keeps its secret"):
                await client.read_resource(f"{prefix}secret")
