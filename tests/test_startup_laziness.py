"""Start-up does only what ``serve`` needs (issue 29): checked by structure, never by a timing.

- ``serve``'s path (the CLI, the config, discovery of the installed plugins, the composed server)
  imports none of the libraries only other commands or other settings use;
- a plugin distribution whose ``METADATA`` never names the core in a ``Requires-Dist`` is not
  parsed, while every spelling of a requirement on the core still is;
- the plugin manager's shortcut for module attributes answers exactly as pluggy does.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pluggy
import pytest
from packaging.version import Version

from mcp_providers import hookspecs
from mcp_providers._host.compat import may_require_core, plugin_core_problem
from mcp_providers._host.hookscan import PluginManager

NOT_ON_SERVE_PATH = (
    "typer",  # a bare `serve` runs without the typer app (mcp_providers._cli.stdio); any other argv builds it
    "mcp_providers.cli",
    "mcp_providers._cli.report",  # check, plugins, inspect
    "rich",  # printed only when something is printed (a clean stdio serve prints nothing)
    "jwt",  # the ServiceNow JWT bearer grant, and [server.auth] over HTTP
    "limits",  # only with [server.limits]
    "packaging",  # only when a requirement is read
    "redis",  # only with [cluster]
    "copier",  # only `new`
    "mcp_providers._cli.schemas",  # only `plugins --settings`
    "mcp_providers._cli.demo",
    "jsonschema",  # only with an upstream tool listed ([plugins.upstream] servers) or an OpenAPI document
    "authlib",  # only at a token request (an OAuth auth configured for an upstream or an OpenAPI service)
    "tomllib",  # only when a config file is read
    "mcp_providers.plugins.upstream.built",  # only with [plugins.upstream] servers: the link, listing, mapping
    "mcp_providers.plugins.upstream.link",
    "mcp_providers.plugins.upstream.mapping",
    "yaml",  # only for a SKILL.md frontmatter not of the simple form (the built-in skills are), or OpenAPI YAML
    # issue 43, second pass: each first used where it is needed, after the first stdio answer or never
    "difflib",  # only to suggest a close name for a misspelt key, hook or field
    "pkgutil",  # only when the masking first lists the single-byte codecs (a held non-ASCII secret)
    "mcp_providers._serve.statics",  # only `serve --strict` and `check`
    "mcp_providers.checks",  # only `check` (the check_composition hook)
    "mcp_providers._host.plugin_checks",
    "mcp_providers._serve.transport.http_policy",  # only serving over HTTP
    "mcp_providers._cli.workers",  # only `serve --workers` and its workers
    "mcp_providers._serve.steps.sinks",  # only with a syslog, webhook or OTLP sink under [server.audit]
    "mcp_providers._serve.state.sealing",  # only with [cluster]
    "mcp_providers._serve.state.shared_reads",  # only with [cluster] (and coalesce_reads)
    "mcp_providers._serve.state.outage",  # only with [cluster]
    # issue 43, fourth pass
    "pydantic.root_model",  # only when a model uses RootModel (building RootModel itself is ~1 ms)
    # issue 43, fifth pass: ServiceNow with no instance serves servicenow://instances and ://tables only
    "mcp_providers.plugins.servicenow.tool_calls",  # the tools' models and calls
    "mcp_providers.plugins.servicenow.reads",  # an instance's resources and completions
    "mcp_providers.plugins.servicenow.connect",  # an instance's HTTP client and its secrets
    "mcp_providers.plugins.servicenow.instance",
    "mcp_providers.plugins.servicenow.jwt_bearer",
    "mcp_providers.plugins.servicenow.oauth",
    "mcp_providers.plugins.servicenow.paging",
    "mcp_providers.plugins.servicenow.live",  # polling, and the 429 back-off shared through [cluster]
    "mcp_providers.plugins.servicenow.query",
    "mcp_providers.plugins.servicenow.schema",
    "mcp_providers.plugins.servicenow.seed",
    "mcp_providers.plugins._library_logs",  # httpx2's logs masked while an instance's clients are open
)

SERVE_PATH = """
import json, sys
import mcp_providers._cli.stdio as stdio  # what a bare `serve` runs (mcp_providers.__main__)
composition = stdio.compose_checked(stdio.load(None), strict=False)
stdio.server_of(composition, strict=False)
stdio.reloads(composition, None, None, None)  # serve always makes a reloader (SIGHUP)
loaded = sorted(m for m in %r if m in sys.modules)  # before the imports below, which import some of them
from mcp_providers.plugins.servicenow import tool_calls
models = [getattr(tool_calls, n) for n in tool_calls.__all__ if isinstance(getattr(tool_calls, n), type)]
assert len(models) == 9, models
built = [m.__name__ for m in models if m.__dict__.get("__pydantic_complete__")]
from mcp_providers._serve.methods import extensions, skills, tasks
from mcp_providers._serve.state import shared_reads
requests = [extensions.ExtensionParams, skills.UriParams, tasks.TaskParams, tasks.UpdateParams, shared_reads._Entry]
built += [m.__name__ for m in requests if m.__dict__.get("__pydantic_complete__")]
import __future__, pydantic
stringly = sorted(name for name, m in list(sys.modules.items())
                  if name.startswith("mcp_providers") and vars(m).get("annotations") is __future__.annotations
                  and any(isinstance(v, type) and issubclass(v, pydantic.BaseModel) and v.__module__ == name
                          for v in vars(m).values()))
print(json.dumps({"served": [r.name for r in composition.records if r.status == "loaded"],
                  "loaded": loaded,
                  "built": built, "stringly": stringly}))
"""


def test_the_serve_path_imports_nothing_only_other_commands_need(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    done = subprocess.run(
        [sys.executable, "-c", SERVE_PATH % (NOT_ON_SERVE_PATH,)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "servicenow" in found["served"]  # the built-in plugins were really composed
    assert found["loaded"] == []
    # With no instance configured no ServiceNow tool is declared: their models' schemas are not built;
    # nor are the params of requests serve has not had yet (extensions, skills, tasks), nor [cluster]'s.
    assert found["built"] == []
    # pydantic compiles and evaluates each string annotation of a model's fields (some 460 on this
    # path, ~8 ms): modules defining models keep their annotations as objects, forward references quoted.
    assert found["stringly"] == [], "drop `from __future__ import annotations` from these model modules"


STDIO_SERVE = """
import json, os, sys
import mcp_providers._serve.transport.stdio_loop as loop
def serving(server, stdout_fd):  # where `serve` would answer its first request: what is imported by then
    os.write(stdout_fd, json.dumps(sorted(m for m in %r if m in sys.modules)).encode() + b"\\n")
    raise SystemExit(0)
loop.serve_stdio = loop.serve_sdk_stdio = serving
sys.argv = ["mcp-providers", "serve"]
from mcp_providers.__main__ import main
main()
"""


def test_stdio_serve_reaches_its_first_answer_without_what_only_other_paths_need(tmp_path: Path) -> None:
    """The whole of a bare ``serve``: ``__main__``, the stdio branch and its transport, up to the
    moment it would read the client's first request (issue 43)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    done = subprocess.run(
        [sys.executable, "-c", STDIO_SERVE % (NOT_ON_SERVE_PATH,)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def _dist(where: Path, name: str, metadata: str) -> importlib.metadata.Distribution:
    info = where / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{metadata}")
    return importlib.metadata.Distribution.at(info)


def test_a_distribution_not_naming_the_core_is_not_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = _dist(tmp_path, "plain_plugin", "Requires-Dist: httpx2>=1\nRequires-Dist: mcp>=2\n")
    assert may_require_core(dist) is False
    parsed = []
    monkeypatch.setattr(type(dist), "requires", property(lambda self: parsed.append(self) or []))
    assert plugin_core_problem(dist) is None
    assert parsed == []


@pytest.mark.parametrize(
    "line",
    [
        "Requires-Dist: mcp-providers<0.0.1",
        "requires-dist: MCP_Providers<0.0.1",
        "Requires-Dist: mcp.providers <0.0.1 ; python_version >= '3'",
        "Requires-Dist:\n  mcp-providers<0.0.1",  # a folded header
    ],
)
def test_every_spelling_of_a_requirement_on_the_core_is_still_checked(tmp_path: Path, line: str) -> None:
    dist = _dist(tmp_path, "pinned_plugin", line + "\n")
    assert may_require_core(dist) is True


def test_a_requirement_on_the_core_found_this_way_rejects_the_plugin(tmp_path: Path) -> None:
    dist = _dist(tmp_path, "pinned_plugin", "Requires-Dist: MCP_Providers<0.0.1\n")
    problem = plugin_core_problem(dist)
    core = importlib.metadata.version("mcp-providers")
    assert Version(core) >= Version("0.0.1")
    assert problem is not None and problem.startswith(
        f"pinned_plugin 1.0 requires mcp-providers<0.0.1; this core is {core}"
    )


def test_an_egg_requires_txt_naming_the_core_is_checked(tmp_path: Path) -> None:
    dist = _dist(tmp_path, "egg_style", "")
    (tmp_path / "egg_style-1.0.dist-info" / "requires.txt").write_text("mcp-providers<0.0.1\n")
    assert may_require_core(dist) is True


@pytest.mark.parametrize(("pkg_info", "requires_txt", "may"), [
    ("Requires-Dist: httpx2>=1\n", "", False),  # a source checkout's .egg-info (setuptools' editable build)
    ("Requires-Dist: mcp-providers<0.0.1\n", "", True),
    ("", "mcp_providers<0.0.1\n", True),
])  # fmt: skip
def test_an_egg_info_is_read_from_its_pkg_info(tmp_path: Path, pkg_info: str, requires_txt: str, may: bool) -> None:
    info = tmp_path / "egg_plugin.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: egg_plugin\nVersion: 1.0\n{pkg_info}")
    (info / "requires.txt").write_text(requires_txt)
    dist = importlib.metadata.Distribution.at(info)
    assert may_require_core(dist) is may
    assert (plugin_core_problem(dist) is not None) is may


def test_no_built_in_settings_model_reads_its_source_at_import() -> None:
    """``use_attribute_docstrings`` makes pydantic read and parse a model's source file when the
    class is made (about 60 ms of the ServiceNow plugin's import): built-in models write
    ``Field(description=...)`` instead."""
    from pydantic import BaseModel

    import mcp_providers.config
    import mcp_providers.plugins.policy
    import mcp_providers.plugins.servicenow.settings

    modules = (mcp_providers.config, mcp_providers.plugins.policy, mcp_providers.plugins.servicenow.settings)
    models = [v for m in modules for v in vars(m).values() if isinstance(v, type) and issubclass(v, BaseModel)]
    assert len(models) > 10
    assert [m.__name__ for m in models if m.model_config.get("use_attribute_docstrings")] == []


hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)


class _Instance:
    @hookimpl
    def settings_model(self) -> None:
        return None


def _with_marker(function: object, opts: object) -> object:
    copy = types.FunctionType(function.__code__, {}, "marked")  # type: ignore[attr-defined]
    setattr(copy, f"{hookspecs.PROJECT}_impl", opts)
    return copy


def _zoo() -> types.ModuleType:
    """A plugin module holding every kind of attribute pluggy tells apart."""
    module = types.ModuleType("zoo_plugin")

    @hookimpl
    def register_prompt_providers(settings: object) -> list[object]:
        return []

    def helper() -> None:
        return None

    @hookimpl(specname="authorize")
    def policy(principal: object) -> None:
        return None

    helper_with_func = functools.wraps(helper)(lambda: None)
    module.__dict__.update(
        register_prompt_providers=register_prompt_providers,
        helper=helper,
        policy=policy,
        a_class=_Instance,
        an_instance=_Instance(),
        a_partial=functools.partial(policy, None),
        a_static=staticmethod(register_prompt_providers),
        a_classmethod=classmethod(register_prompt_providers),
        a_bound=_Instance().settings_model,
        a_constant=3,
        a_wrapped=helper_with_func,
        __annotations__={},
        __version__="1.0",
        __getattr__=helper,  # PEP 562: a plain dunder function
        __marked__=register_prompt_providers,  # a marked function under a dunder name
        __repr__=register_prompt_providers,  # a marked function under a name the module type holds
        not_a_dict=_with_marker(helper, "not options"),  # a marker pluggy reads as no options
    )
    return module


def test_the_shortcut_answers_as_pluggy_does_for_every_attribute() -> None:
    zoo = _zoo()
    ours, theirs = PluginManager(hookspecs.PROJECT), pluggy.PluginManager(hookspecs.PROJECT)
    names = [*dir(zoo), "missing", "authorize", "__repr__", "__class__", "__init__", "__dir__"]
    assert {n: ours.parse_hookimpl_opts(zoo, n) for n in names} == {
        n: theirs.parse_hookimpl_opts(zoo, n) for n in names
    }
    assert ours.parse_hookimpl_opts(zoo, "register_prompt_providers") is not None  # the comparison saw real hooks
    assert ours.parse_hookimpl_opts(zoo, "a_bound") is not None
    assert {n: ours.parse_hookspec_opts(hookspecs, n) for n in dir(hookspecs)} == {
        n: theirs.parse_hookspec_opts(hookspecs, n) for n in dir(hookspecs)
    }
    ours.add_hookspecs(hookspecs)
    theirs.add_hookspecs(hookspecs)
    del zoo.__repr__  # pluggy itself cannot register a hook of that name (its hook relay holds one)
    ours.register(zoo)
    theirs.register(zoo)
    assert sorted(h.name for h in ours.get_hookcallers(zoo) or []) == sorted(
        h.name for h in theirs.get_hookcallers(zoo) or []
    )


def test_the_hookspec_answers_asked_once_are_not_shared_between_managers() -> None:
    """The hookspecs' answers are kept per process (one manager per plugin); each manager gets its
    own copy, so one that changes what it was given changes no other."""
    first, second = PluginManager(hookspecs.PROJECT), PluginManager(hookspecs.PROJECT)
    given = first.parse_hookspec_opts(hookspecs, "authorize")
    assert given is not None
    given["firstresult"] = "changed"  # type: ignore[typeddict-item]
    again = second.parse_hookspec_opts(hookspecs, "authorize")
    assert again == pluggy.PluginManager(hookspecs.PROJECT).parse_hookspec_opts(hookspecs, "authorize")


IMPORT_COLLECTIONS = """
import gc, json, sys
%s
older = lambda: sum(s["collections"] for s in gc.get_stats()[1:])  # the passes that walk more than the young
import mcp_providers  # a library import: never pauses the host's collector
before = older()
import mcp_providers.cli
print(json.dumps({"collections": older() - before,
                  "enabled": gc.isenabled(), "sdk": "mcp.server" in sys.modules}))
"""


@pytest.mark.parametrize("collector", ["enabled", "disabled"])
def test_the_cli_import_runs_no_collection_and_leaves_the_collector_as_found(collector: str) -> None:
    """The CLI imports the SDK and the serving core with the cyclic collector paused
    (``mcp_providers._gc``): no pass over the older generations they fill (unpaused: about 20, two
    of them full), and the collector's state is what the process had. ``import mcp_providers``
    itself pauses nothing (``test_embedded_guards``)."""
    setup = "gc.disable()" if collector == "disabled" else ""
    done = subprocess.run([sys.executable, "-c", IMPORT_COLLECTIONS % setup], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    seen = json.loads(done.stdout)
    assert seen["sdk"] is True  # the heavy part was imported under the pause
    assert seen["collections"] == 0
    assert seen["enabled"] is (collector == "enabled")


def test_serve_composes_with_the_collector_paused_then_freezes_the_start_up_heap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from cli_support import run_cli

    import mcp_providers._cli.stdio

    seen: dict[str, object] = {}
    compose = mcp_providers._cli.stdio.compose_checked

    def composing(*args: object, **kwargs: object) -> object:
        seen["enabled while composing"] = gc.isenabled()
        return compose(*args, **kwargs)  # type: ignore[arg-type]

    def serving(*args: object) -> None:
        seen["enabled while serving"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count()

    monkeypatch.setattr("mcp_providers._cli.stdio.compose_checked", composing)
    monkeypatch.setattr("mcp_providers.cli._serve_stdio", serving)
    done = run_cli("serve", env={"MCP_PROVIDERS_CONFIG": None})  # which unfreezes this process after
    assert done.returncode == 0, done.stderr
    assert gc.get_freeze_count() == 0
    assert seen["enabled while composing"] is False
    assert seen["enabled while serving"] is True
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000


SDK_FREE = ("mcp_providers", "mcp_providers.identity", "mcp_providers.plugin", "mcp_providers.models",
            "mcp_providers.providers", "mcp_providers.policy", "mcp_providers.hookspecs", "mcp_providers.config",
            "mcp_providers.credentials", "mcp_providers.http", "mcp_providers.skills",
            "mcp_providers.checks")  # fmt: skip


@pytest.mark.parametrize("module", SDK_FREE)
def test_a_plugins_imports_of_the_public_api_leave_the_sdk_unimported(module: str) -> None:
    """What a plugin imports at import time (its decorators, models, providers, the policy and
    identity types) imports no part of the MCP SDK: ``check`` and every plugin's import stay cheap.
    This session's identity refusal had put the SDK's ``AccessToken`` at the top of ``identity``."""
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert found.stdout.strip() == "[]", found.stdout
