"""Fail closed by construction (issue 24, items 1 and 2): a policy is known by what pluggy would
register from it, never by the name its hook has in the source, and ``[server] require_plugins``
names the plugins ``serve`` refuses to start without.

Every case installs one distribution whose plugin ``acme`` carries a deny-all ``authorize`` spelt
some other way, then gets rejected for some reason (or is a hook wrapper, which answers nothing).
On the old main each of these served ``documcp://ssgs/hugo`` with no policy at all. Since round 4
(item 22) ``acme`` is declared in the ``mcp_providers.policy`` group, as policy plugins are; the
provider group's rules are in ``test_plugin_groups.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefork import python

from mcp_providers import compose, load_config
from mcp_providers.errors import CompositionError
from mcp_providers.hookspecs import POLICY_GROUP, PROJECT

HEADER = """
from mcp_providers import Decision, hookimpl, Resource, ResourceProvider, Content

def _deny(subject, action, target):
    return Decision(False, "acme denies everything")
"""


def renamed(
    name: str, marker: str = 'specname="authorize"', body: str = "return _deny(subject, action, target)"
) -> str:
    """A module-level ``authorize`` implementation under another function name."""
    return f"@hookimpl({marker})\ndef {name}(subject, action, target):\n    {body}\n"


# What makes pluggy-or-discovery reject the plugin after its authorize is in place.
RAISES = """
@hookimpl
def register_resource_providers():
    raise RuntimeError("acme backend is down")
"""
UNKNOWN_HOOK = """
@hookimpl
def register_widgets():
    return []
"""
MISMATCH = """
@hookimpl
def settings_model(tenant):
    return None
"""
FAILS_CHECKS = """
class _Bad(ResourceProvider):
    name = "acme-bad"
    prefixes = ("acme://",)
    def resources(self):
        return [Resource(uri="relative/path", name="bad")]
    async def read(self, request):
        return Content(text="x")

@hookimpl
def register_resource_providers():
    return [_Bad()]
"""

# entry-point value, module source, text the refusal line must carry
SPELLINGS: dict[str, tuple[str, str, str]] = {
    "specname under another name, provider hook raises": (
        "acme_a",
        HEADER + renamed("gate") + RAISES,
        "it has an authorize hookimpl (gate)",
    ),
    "specname, unknown hook": (
        "acme_b",
        HEADER + renamed("check_access") + UNKNOWN_HOOK,
        "implements unknown hook(s) register_widgets",
    ),
    "specname with the project prefix, another hook's signature mismatches": (
        "acme_c",
        HEADER + renamed("mcp_providers_authorize") + MISMATCH,
        "hook signature does not match",
    ),
    "specname, failed checks": (
        "acme_d",
        HEADER + renamed("policy", 'specname="authorize", tryfirst=True') + FAILS_CHECKS,
        "failed checks",
    ),
    "class instance plugin, method with specname": (
        "acme_e:PLUGIN",
        HEADER
        + textwrap.dedent("""
            class Acme:
                @hookimpl(specname="authorize")
                def decide(self, subject, action, target):
                    return _deny(subject, action, target)

                @hookimpl
                def register_resource_providers(self):
                    raise RuntimeError("down")

            PLUGIN = Acme()
        """),
        "it has an authorize hookimpl (decide)",
    ),
    "class as plugin, staticmethod with specname": (
        "acme_f:Acme",
        HEADER
        + textwrap.dedent("""
            class Acme:
                @staticmethod
                @hookimpl(specname="authorize")
                def rule(subject, action, target):
                    return _deny(subject, action, target)

                @staticmethod
                @hookimpl
                def register_prompt_providers():
                    raise ValueError("no prompts today")
        """),
        "it has an authorize hookimpl (rule)",
    ),
    "set with setattr at import time, name assembled at run time": (
        "acme_g",
        HEADER
        + textwrap.dedent("""
            import sys
            _name = "".join(["auth", "or", "ize"])
            setattr(sys.modules[__name__], "z" + "q", hookimpl(specname=_name)(_deny))
        """)
        + RAISES,
        "it has an authorize hookimpl (_deny, zq)",  # the marker is set on _deny itself
    ),
    "import fails before the hook is defined": (
        "acme_h",
        # the hook name is assembled at run time: no source text says "authorize"
        "import acme_missing_dependency_h  # noqa\n" + HEADER + renamed("g", 'specname="auth" + "orize"'),
        "it is declared in the mcp_providers.policy entry-point group",
    ),
    "import raises SystemExit after the hook is defined": (
        "acme_i",
        HEADER + renamed("g", 'specname="auth" + "orize"') + "raise SystemExit(3)\n",
        "it is declared in the mcp_providers.policy entry-point group",
    ),
    "hookwrapper-only authorize (otherwise loads)": (
        "acme_j",
        HEADER + '@hookimpl(hookwrapper=True, specname="authorize")\ndef around(subject, action, target):\n    yield\n',
        "a policy must be a plain @hookimpl",
    ),
    "new-style wrapper-only authorize": (
        "acme_k",
        HEADER + "@hookimpl(wrapper=True)\ndef authorize(subject, action, target):\n    return (yield)\n",
        "a policy must be a plain @hookimpl",
    ),
    "module __getattr__ hands out authorize (pluggy never registers it)": (
        "acme_l",
        HEADER
        + textwrap.dedent("""
            _hidden = hookimpl(_deny)
            def __getattr__(name):
                if name == "authorize":
                    return _hidden
                raise AttributeError(name)
        """),
        "pluggy does not register it",
    ),
    "functools.partial marked authorize": (
        "acme_m",
        HEADER
        + textwrap.dedent("""
            import functools
            authorize = hookimpl(functools.partial(_deny))
        """),
        "pluggy does not register it",
    ),
    "import code registers a second object into the composition's manager": (
        "acme_n",
        HEADER
        + textwrap.dedent("""
            import gc
            import pluggy

            class _Second:
                @hookimpl(specname="authorize")
                def anything(self, subject, action, target):
                    return _deny(subject, action, target)

            for _pm in [o for o in gc.get_objects() if isinstance(o, pluggy.PluginManager)]:
                if _pm.project_name == "mcp_providers" and hasattr(_pm.hook, "register_prompt_providers"):
                    try:
                        _pm.register(_Second())
                    except ValueError:
                        pass
        """),
        "belongs to no served plugin",
    ),
}

CONFIG = """
allow = ["policy", "ssg_catalog", "acme"]
[plugins.policy]
[[plugins.policy.rules]]
effect = "allow"
subjects = ["*"]
actions = ["list", "read", "expand", "complete", "subscribe", "call", "prompt"]
targets = ["*"]
"""


def _install(
    site: Path, value: str, source: str, *, name: str = "acme", dist: str = "acme_policy", group: str = POLICY_GROUP
) -> None:
    """Install ``acme`` as a policy plugin (round 4 item 22: policies declare themselves in their
    own group); ``group="mcp_providers"`` makes it a provider plugin."""
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {value}\n")
    (site / f"{value.partition(':')[0]}.py").write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    for key in [k for k in os.environ if k.startswith("MCP_PROVIDERS_")]:
        monkeypatch.delenv(key)
    before = set(sys.modules)
    yield root
    for module in set(sys.modules) - before:
        if module.startswith("acme"):
            del sys.modules[module]


def _config(tmp_path: Path, text: str = CONFIG) -> Path:
    path = tmp_path / "mcp-providers.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("value", "source", "why"), SPELLINGS.values(), ids=SPELLINGS.keys())
def test_every_spelling_of_a_rejected_policy_stops_serve(
    site: Path, tmp_path: Path, value: str, source: str, why: str
) -> None:
    _install(site, value, source)
    composition = compose(load_config(_config(tmp_path)))
    lines = [line for line in composition.policy_failures if "acme" in line.partition(":")[0]]
    assert lines and why in " ".join(lines), composition.policy_failures
    with pytest.raises(CompositionError) as refused:
        _ = composition.server
    assert refused.value.problems[0] == "refusing to serve without its authorization policy:"


def test_a_plugin_without_any_authorize_is_still_served_around(site: Path, tmp_path: Path) -> None:
    # The rule stays narrow: a rejected plugin that pluggy shows holds no authorize does not stop serve.
    _install(site, "acme_plain", HEADER + "def authorize_me_not(subject):\n    return None\n" + RAISES, group=PROJECT)
    composition = compose(load_config(_config(tmp_path)))
    assert [r.status for r in composition.records if r.name == "acme"] == ["rejected"]
    assert composition.policy_failures == []
    assert composition.server is not None


def test_a_deselected_configured_plugin_with_a_renamed_authorize_stops_serve(site: Path, tmp_path: Path) -> None:
    _install(site, "acme_o", HEADER + renamed("g", body="return None"))
    config = _config(tmp_path, 'allow = ["ssg_catalog"]\n[plugins.acme]\n')
    composition = compose(load_config(config))
    assert any(line.startswith("acme: policy plugin has [plugins.acme]") for line in composition.policy_failures)


def test_a_duplicated_entry_point_whose_one_side_has_a_renamed_authorize_stops_serve(
    site: Path, tmp_path: Path
) -> None:
    # Both in the provider group: only what one side would register makes it a policy plugin.
    _install(site, "acme_p1", HEADER, dist="acme_one", group=PROJECT)
    _install(site, "acme_p2", HEADER + renamed("g", body="return None"), dist="acme_two", group=PROJECT)
    composition = compose(load_config(_config(tmp_path)))
    line = next(line for line in composition.policy_failures if line.startswith("acme:"))
    assert "is declared by" in line and "it has an authorize hookimpl (g)" in line


# -- [server] require_plugins -------------------------------------------------------------------

REQUIRE = '[server]\nrequire_plugins = ["policy"]\n'


@pytest.mark.parametrize(
    ("config_text", "expected"),
    [
        ('allow = ["ssg_catalog"]\n' + REQUIRE, "policy: required by [server] require_plugins but disabled"),
        ('deny = ["policy"]\n' + REQUIRE, "policy: required by [server] require_plugins but disabled"),
        (
            REQUIRE + '[plugins.policy]\ndefault = "maybe"\n',
            "policy: required by [server] require_plugins but rejected",
        ),
        ('[server]\nrequire_plugins = ["acme_x"]\n', "acme_x: required by [server] require_plugins but not installed"),
    ],
    ids=["left-out-by-allow", "denied", "invalid-settings", "not-installed"],
)
def test_require_plugins_refuses_unless_each_is_served(tmp_path: Path, config_text: str, expected: str) -> None:
    composition = compose(load_config(_config(tmp_path, config_text)))
    assert any(line.startswith(expected) for line in composition.policy_failures), composition.policy_failures
    assert any(line.startswith(expected) for line in composition.failures)  # `check` prints it too
    with pytest.raises(CompositionError):
        _ = composition.server


def test_require_plugins_catches_a_required_plugin_that_fails_its_checks(site: Path, tmp_path: Path) -> None:
    # acme holds no authorize at all, so only the operator's list knows it matters.
    _install(site, "acme_q", HEADER + FAILS_CHECKS, group=PROJECT)
    text = 'allow = ["acme", "ssg_catalog"]\n[server]\nrequire_plugins = ["acme"]\n'
    composition = compose(load_config(_config(tmp_path, text)))
    assert composition.policy_failures == [
        "acme: required by [server] require_plugins but rejected (failed checks (see mcp-providers check))"
    ]


def test_require_plugins_serves_when_each_is_loaded(tmp_path: Path) -> None:
    composition = compose(load_config(_config(tmp_path, REQUIRE + "[plugins.policy]\n")))
    assert composition.policy_failures == []
    assert composition.server is not None


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["specname under another name, provider hook raises", "hookwrapper-only authorize (otherwise loads)"]
)
def test_serve_refuses_over_stdio_before_answering_anything(tmp_path: Path, case: str) -> None:
    value, source, why = SPELLINGS[case]
    site = tmp_path / "site"
    site.mkdir()
    _install(site, value, source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    run = subprocess.run(
        [*python(), "-m", "mcp_providers", "serve", "-c", str(_config(tmp_path))],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        input="",
    )
    assert run.returncode == 1, run.stderr
    assert "refusing to serve without its authorization policy" in run.stderr
    assert why in run.stderr
    assert run.stdout == ""
