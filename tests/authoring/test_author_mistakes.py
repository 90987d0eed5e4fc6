"""The ten common author mistakes of issue 39 (must-show 2), one test each, plus the decorator
form's own: each is caught by ``check`` with the fix named, is correct in the decorator form, or is
refused at read time naming the provider and the fix."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers import Content, ReadRequest, Resource, ResourceProvider, hookimpl
from mcp_providers._host.shape import contributes_nothing
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose, connect


def _module(name: str, **functions: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in functions.items():
        if callable(value) and hasattr(value, "__module__"):
            value.__module__ = name
        setattr(module, key, value)
    return module


class _Fixed(ResourceProvider):
    name = "fixed"
    prefixes = ("fixed://",)

    def resources(self) -> list[Resource]:
        return [Resource(uri="fixed://a", name="a")]

    async def read(self, request: ReadRequest) -> Content:
        return Content(text="a")


def _failures(plugins: dict[str, object], settings: dict[str, Any] | None = None) -> list[str]:
    return compose(plugins, settings, strict=False).failures


# 1. a forgotten @hookimpl


def test_a_hook_without_its_marker_is_refused_naming_the_marker() -> None:
    def register_resource_providers(settings: Any) -> list[ResourceProvider]:
        return [_Fixed()]

    failures = _failures({"unmarked": _module("unmarked_mod", register_resource_providers=register_resource_providers)})
    assert any("register_resource_providers without @hookimpl" in f and "put @hookimpl" in f for f in failures), (
        failures
    )


def test_a_misspelled_unmarked_hook_names_the_hook() -> None:
    def register_resource_provider(settings: Any) -> list[ResourceProvider]:
        return [_Fixed()]

    failures = _failures({"typo": _module("typo_mod", register_resource_provider=register_resource_provider)})
    assert any("(the hook is register_resource_providers)" in f for f in failures), failures


# 2. a misspelled hook


def test_a_misspelled_hook_gets_did_you_mean() -> None:
    @hookimpl
    def register_tool_provider(settings: Any) -> list[Any]:
        return []

    failures = _failures({"misspelled": _module("misspelled_mod", register_tool_provider=register_tool_provider)})
    assert any("did you mean register_tool_providers?" in f for f in failures), failures


# 3. an invalid template, 4. a URI outside the prefixes


def test_an_invalid_template_is_a_check_error() -> None:
    plugin = Plugin("bad_template", prefixes=["notes://"])

    @plugin.template("notes://{book")
    def page(book: str) -> str:
        return book

    failures = _failures({"bad_template": plugin})
    assert any("notes://{book" in f and "fix:" in f for f in failures), failures


def test_a_uri_outside_the_prefixes_is_a_check_error() -> None:
    plugin = Plugin("outside", prefixes=["notes://"])

    @plugin.resource("other://index")
    def index() -> str:
        return "x"

    failures = _failures({"outside": plugin})
    assert any("other://index" in f and "fix:" in f for f in failures), failures


# 5. a prefix another plugin owns: both authors and the operator are told the fix


def test_a_prefix_overlap_tells_the_operator_which_plugin_to_deny() -> None:
    first, second = Plugin("first", prefixes=["notes://"]), Plugin("second", prefixes=["notes://a/"])
    first.resource("notes://index")(lambda: "1")
    second.resource("notes://a/index")(lambda: "2")
    failures = _failures({"first": first, "second": second})
    overlap = [f for f in failures if "prefix-overlap" in f]
    assert overlap and 'deny = ["second"] or deny = ["first"]' in overlap[0], failures


# 6. a read that is not async


def test_a_class_providers_plain_read_is_refused_naming_async() -> None:
    class Sync(_Fixed):
        def read(self, request: ReadRequest) -> Content:  # type: ignore[override]
            return Content(text="a")

    @hookimpl
    def register_resource_providers(settings: Any) -> list[ResourceProvider]:
        return [Sync()]

    failures = _failures({"sync": _module("sync_mod", register_resource_providers=register_resource_providers)})
    assert any("Sync.read of provider 'fixed' is not async" in f and "async def read" in f for f in failures), failures


@pytest.mark.anyio
async def test_a_plain_function_is_correct_in_the_decorator_form() -> None:
    plugin = Plugin("plain", prefixes=["plain://"])
    plugin.resource("plain://x")(lambda: "from a thread")
    async with connect(compose({"plain": plugin})) as client:
        assert (await client.read_resource("plain://x")).contents[0].text == "from a thread"  # type: ignore[union-attr]


# 7. and 8. returning str or dict


@pytest.mark.anyio
@pytest.mark.parametrize("value", ["text", {"a": 1}])
async def test_returning_str_or_dict_from_a_class_read_is_refused_naming_the_provider(value: object) -> None:
    class Loose(_Fixed):
        async def read(self, request: ReadRequest) -> Content:
            return value  # type: ignore[return-value]

    @hookimpl
    def register_resource_providers(settings: Any) -> list[ResourceProvider]:
        return [Loose()]

    composition = compose({"loose": _module("loose_mod", register_resource_providers=register_resource_providers)})
    async with connect(composition) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("fixed://a")
    message = refused.value.error.message
    assert "provider 'fixed'" in message and "expected Content: return Content(text=...)" in message, message


@pytest.mark.anyio
async def test_returning_str_dict_list_model_or_bytes_is_correct_in_the_decorator_form() -> None:
    class Model(BaseModel):
        a: int

    plugin = Plugin("values", prefixes=["v://"])
    plugin.resource("v://str")(lambda: "s")
    plugin.resource("v://dict")(lambda: {"a": 1})
    plugin.resource("v://list")(lambda: [1, 2])
    plugin.resource("v://model")(lambda: Model(a=2))
    plugin.resource("v://bytes")(lambda: b"\x00\x01")
    async with connect(compose({"values": plugin})) as client:
        read = {uri: (await client.read_resource(uri)).contents[0] for uri in ("v://str", "v://dict", "v://list")}
        assert [getattr(c, "text", None) for c in read.values()] == ["s", '{"a":1}', "[1,2]"]
        assert read["v://dict"].mime_type == "application/json"
        assert (await client.read_resource("v://model")).contents[0].text == '{"a":2}'  # type: ignore[union-attr]
        assert (await client.read_resource("v://bytes")).contents[0].blob == "AAE="  # type: ignore[union-attr]


# 9. a file write in a read: refused, also from a plain function run in a thread


@pytest.mark.anyio
@pytest.mark.parametrize("is_async", [True, False])
async def test_a_file_write_in_a_decorated_read_is_refused(tmp_path: Path, is_async: bool) -> None:
    target = tmp_path / "written.txt"
    plugin = Plugin("writer", prefixes=["w://"])

    def write() -> str:
        target.write_text("x")
        return "wrote"

    async def write_async() -> str:
        return write()

    plugin.resource("w://x")(write_async if is_async else write)
    async with connect(compose({"writer": plugin})) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("w://x")
    assert refused.value.error.code == -32008
    assert not target.exists()


# 10. invalid settings


def test_invalid_settings_name_the_field_and_the_other_plugins_serve() -> None:
    class Settings(BaseModel):
        limit: int = 10

    plugin = Plugin("configured", prefixes=["c://"], settings=Settings)
    plugin.resource("c://x")(lambda settings: str(settings.limit))
    composition = compose(
        {"configured": plugin, "fixed": _fixed_plugin()}, {"configured": {"limit": "many"}}, strict=False
    )
    assert any("plugins.configured.limit" in f for f in composition.failures), composition.failures
    assert composition.catalog.served_count == 1


def _fixed_plugin() -> types.ModuleType:
    @hookimpl
    def register_resource_providers(settings: Any) -> list[ResourceProvider]:
        return [_Fixed()]

    return _module("fixed_mod", register_resource_providers=register_resource_providers)


# 11. a raising read: that request fails naming nothing secret, the next one is served


@pytest.mark.anyio
async def test_a_raising_read_fails_that_read_alone() -> None:
    plugin = Plugin("raising", prefixes=["r://"])

    @plugin.resource("r://boom")
    def boom() -> str:
        raise RuntimeError("database password=hunter2 unreachable")

    async with connect(compose({"raising": plugin, "fixed": _fixed_plugin()})) as client:
        with pytest.raises(MCPError) as failed:
            await client.read_resource("r://boom")
        assert "hunter2" not in failed.value.error.message
        assert (await client.read_resource("fixed://a")).contents[0].text == "a"  # type: ignore[union-attr]


# the decorator form's own mistakes, caught at composition with the fix named


def test_a_template_variable_without_a_parameter_names_both() -> None:
    plugin = Plugin("mismatch", prefixes=["m://"])

    @plugin.template("m://{book}/{page}")
    def page(book: str) -> str:
        return book

    failures = _failures({"mismatch": plugin})
    assert any("variable(s) page" in f and "add page: str" in f for f in failures), failures


def test_a_required_parameter_without_a_variable_names_both() -> None:
    plugin = Plugin("extra", prefixes=["m://"])

    @plugin.template("m://{book}")
    def page(book: str, page: str) -> str:
        return book

    failures = _failures({"extra": plugin})
    assert any("parameter(s) page receive nothing" in f and "m://{book}" in f for f in failures), failures


def test_a_completion_of_a_name_the_template_or_prompt_lacks_names_what_it_has() -> None:
    """Tester thirteen: ``@tpl.complete("zz")`` on a template without ``{zz}`` passed ``check`` and
    completed nothing (the same mistake through ``completions=`` was caught)."""
    plugin = Plugin("completes", prefixes=["c://"])

    @plugin.template("c://{book}")
    def book(book: str) -> str:
        return book

    @book.complete("zz")
    def zz(zz: str) -> list[str]:
        return []

    @plugin.prompt()
    def summary(topic: str) -> str:
        """A summary."""
        return topic

    @summary.complete("subject")
    def subject(subject: str) -> list[str]:
        return []

    failures = _failures({"completes": plugin})
    assert any(".complete('zz') on template 'c://{book}', which has no 'zz'" in f and ": book" in f for f in failures)
    plugin._completions.pop(("template", "c://{book}", "zz"))
    failures = _failures({"completes": plugin})
    assert any(".complete('subject') on prompt 'summary'" in f and "arguments: topic" in f for f in failures), failures


def test_a_settings_parameter_without_a_settings_model_is_refused_naming_the_fix() -> None:
    """Tester thirteen: in a plugin with no settings model a parameter named ``settings`` became a
    required argument the model had to supply; the docs say it receives the settings."""
    plugin = Plugin("unset")

    @plugin.tool()
    def lookup(query: str, settings: dict[str, str]) -> str:
        """Looks a query up."""
        return query

    failures = _failures({"unset": plugin})
    assert any("this plugin has no settings model" in f and "Plugin(..., settings=Model)" in f for f in failures)


def test_a_variadic_parameter_is_named_with_its_own_stars() -> None:
    plugin = Plugin("stars")
    plugin.tool()(lambda query, **kw: query)
    assert any("**kw cannot be declared" in f for f in _failures({"stars": plugin}))


def test_a_tool_without_a_docstring_is_refused_naming_the_fix() -> None:
    plugin = Plugin("undocumented")
    plugin.tool()(lambda query: query)
    failures = _failures({"undocumented": plugin})
    assert any("has no description; give the function a docstring" in f for f in failures), failures


def test_a_loaded_plugin_that_contributes_nothing_is_named_by_check() -> None:
    composition = compose({"empty": Plugin("empty"), "fixed": _fixed_plugin()}, strict=False)
    assert contributes_nothing(composition.records) == [
        "empty: loaded but contributes nothing: no resource, template, tool, prompt, extension or authorize hook; "
        "declare something with its decorators or hooks, or uninstall it"
    ]


def test_a_helper_named_near_a_hook_beside_real_hookimpls_is_left_alone() -> None:
    def authorized(subject: str) -> bool:  # a helper, not a misspelled authorize
        return bool(subject)

    @hookimpl
    def register_resource_providers(settings: Any) -> list[ResourceProvider]:
        return [_Fixed()]

    module = _module("helper_mod", authorized=authorized, register_resource_providers=register_resource_providers)
    assert _failures({"helper": module}) == []
