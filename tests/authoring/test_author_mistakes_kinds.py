"""Author mistakes ``check`` passed silently, each failing only when called (tester twenty-one):
a tool's return JSON cannot carry, a generator or an un-awaited coroutine where a value was meant,
an unannotated ``ctx``, an entry point in a near-miss group. Each is now refused or warned about at
declaration, or, where only the call can tell, refused naming the plugin, the tool or function and
the fix."""

from __future__ import annotations

import functools
import logging
import math
import typing
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from mcp import MCPError
from pydantic import BaseModel

from mcp_providers._cli.report import warnings as check_warnings
from mcp_providers.plugin import Context, Plugin
from mcp_providers.testing import assert_check_passes, check, compose, connect


class _Opaque:
    """A value JSON has no form for."""


def _tool_plugin(annotation: Any, value: Callable[[], Any], name: str = "t") -> Plugin:
    plugin = Plugin("outs", prefixes=["outs://"])

    def t() -> Any:
        return value()

    t.__annotations__["return"] = annotation
    t.__doc__ = "Returns a value."
    plugin.tool(name=name)(t)
    return plugin


async def _call_error(plugin: Plugin, tool: str = "t") -> str:
    async with connect(compose({"outs": plugin})) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool(tool, {})
    return refused.value.error.message


# F2: a tool's return that JSON cannot carry


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (object, _Opaque),
        (typing.Any, _Opaque),
        (list, lambda: [_Opaque()]),
        (dict, lambda: {"a": b"\xff"}),
        (dict[str, Any], lambda: {"a": {"b": _Opaque()}}),
    ],
    ids=["object", "Any", "list", "dict-bytes", "dict-nested"],
)
async def test_a_tool_output_json_cannot_carry_names_plugin_tool_and_what_to_return(
    annotation: Any, value: Callable[[], Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, "mcp_providers"):
        message = await _call_error(_tool_plugin(annotation, value))
    assert "tool 't' (plugin 'outs')" in message and "JSON cannot carry" in message, message
    assert "return JSON values" in message, message
    assert "internal error" not in message
    logged = [r.getMessage() for r in caplog.records if "tool 't' (plugin 'outs')" in r.getMessage()]
    assert logged, [r.getMessage() for r in caplog.records]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("annotation", "value", "where"),
    [
        (float, lambda: math.nan, "result"),
        (float, lambda: math.inf, "result"),
        (list[float], lambda: [1.0, -math.inf], "result[1]"),
        (dict[str, float], lambda: {"ok": 1.0, "bad": math.nan}, "result.bad"),
    ],
    ids=["nan", "inf", "list", "dict"],
)
async def test_a_non_finite_number_is_refused_not_sent_breaking_the_output_schema(
    annotation: Any, value: Callable[[], Any], where: str
) -> None:
    message = await _call_error(_tool_plugin(annotation, value))
    assert "tool 't' (plugin 'outs')" in message and "non-finite" in message and where in message, message
    assert "a finite number" in message, message


@pytest.mark.anyio
async def test_a_model_output_with_a_non_finite_field_is_refused() -> None:
    class Reading(BaseModel):
        celsius: float

    message = await _call_error(_tool_plugin(Reading, lambda: Reading(celsius=math.nan)))
    assert "non-finite" in message and "celsius" in message, message


@pytest.mark.anyio
async def test_finite_numbers_and_json_values_are_still_served() -> None:
    plugin = _tool_plugin(dict[str, Any], lambda: {"a": [1.5, "NaN", None], "b": "Infinity"})
    async with connect(compose({"outs": plugin})) as client:
        result = await client.call_tool("t", {})
    assert result.structured_content == {"result": {"a": [1.5, "NaN", None], "b": "Infinity"}}


@pytest.mark.anyio
async def test_a_read_of_a_non_finite_number_is_refused_naming_the_function(caplog: pytest.LogCaptureFixture) -> None:
    plugin = Plugin("nums", prefixes=["nums://"])

    @plugin.resource("nums://x")
    def x() -> float:
        return math.nan

    with caplog.at_level(logging.ERROR, "mcp_providers"):
        async with connect(compose({"nums": plugin})) as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource("nums://x")
    assert "plugin 'nums'" in refused.value.error.message
    logged = "\n".join(str(r.exc_info[1]) for r in caplog.records if r.exc_info)
    assert ".x returned a non-finite number" in logged and "a finite number" in logged, logged


@pytest.mark.parametrize("annotation", [object, typing.Any, typing.Annotated[typing.Any, "x"]])
def test_a_tool_returning_any_or_object_is_a_check_warning(annotation: Any) -> None:
    composition = compose({"outs": _tool_plugin(annotation, _Opaque, name="vague")})
    assert not composition.failures
    _, found = check_warnings(composition)
    lines = [w for w in found if "output-schema-says-nothing" in w]
    assert len(lines) == 1 and "outs:" in lines[0] and "'vague'" in lines[0] and "fix: annotate" in lines[0], found


def test_a_tool_returning_a_typed_value_has_no_such_warning() -> None:
    composition = compose({"outs": _tool_plugin(dict[str, int], dict)})
    assert not [w for w in check_warnings(composition)[1] if "output-schema-says-nothing" in w]


# F5: a generator, an un-awaited coroutine, an unannotated ctx


def _sync_gen() -> Any:
    """Yields."""
    yield "a"


async def _async_gen() -> Any:
    """Yields."""
    yield "a"


def _declare(kind: str, function: Callable[..., Any]) -> Plugin:
    plugin = Plugin("gens", prefixes=["gens://"])
    if kind == "resource":
        plugin.resource("gens://x")(function)
    elif kind == "template":
        plugin.template("gens://{a}")(lambda a: a).complete("a")(function)
    elif kind == "tool":
        plugin.tool(name="t")(function)
    else:
        plugin.prompt(name="p")(function)
    return plugin


@pytest.mark.parametrize("function", [_sync_gen, _async_gen], ids=["sync", "async"])
@pytest.mark.parametrize("kind", ["resource", "template", "tool", "prompt"])
def test_a_generator_is_refused_at_declaration(kind: str, function: Callable[..., Any]) -> None:
    failures = compose({"gens": _declare(kind, function)}, strict=False).failures
    assert any(
        "_gen: is a generator function" in f and "return the value" in f and "instead of yielding" in f
        for f in failures
    ), failures


async def _helper() -> str:
    return "x"


def _forgot_await() -> str:
    """Forgets to await its helper."""
    return _helper()  # type: ignore[return-value]


async def _forgot_await_async() -> str:
    """Forgets to await its helper."""
    return _helper()  # type: ignore[return-value]


def _returns_generator() -> Any:
    """Returns a generator expression."""
    return (c for c in "ab")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("function", "said"),
    [
        (_forgot_await, "returned a coroutine it did not await"),
        (_forgot_await_async, "returned a coroutine it did not await"),
        (_returns_generator, "returned a generator"),
    ],
    ids=["sync", "async", "generator-object"],
)
@pytest.mark.parametrize("kind", ["resource", "tool"])
async def test_an_unawaited_coroutine_or_generator_returned_is_refused_naming_the_function(
    kind: str, function: Callable[..., Any], said: str, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = _declare(kind, function)
    with warnings.catch_warnings(), caplog.at_level(logging.ERROR, "mcp_providers"):
        warnings.simplefilter("error", RuntimeWarning)  # "never awaited": the coroutine must be closed
        async with connect(compose({"gens": plugin})) as client:
            with pytest.raises(MCPError) as refused:
                if kind == "resource":
                    await client.read_resource("gens://x")
                else:
                    await client.call_tool("t", {})
    assert "plugin 'gens'" in refused.value.error.message, refused.value.error.message
    logged = "\n".join(str(r.exc_info[1]) for r in caplog.records if r.exc_info)
    assert f"{function.__name__} {said}" in logged, logged


@pytest.mark.parametrize("name", ["ctx", "context", "Ctx"])
def test_an_unannotated_ctx_offered_to_the_model_is_a_check_warning(name: str) -> None:
    plugin = Plugin("ctxs", prefixes=["ctxs://"])

    def t(x: str, **_: Any) -> str:
        return x

    namespace: dict[str, Any] = {}
    exec(f"def t(x: str, {name}) -> str:\n    'Uses its context.'\n    return x", namespace)  # the unannotated form
    plugin.tool()(namespace["t"])
    exec(f"def p({name}) -> str:\n    'A prompt.'\n    return 'x'", namespace)
    plugin.prompt()(namespace["p"])
    composition = compose({"ctxs": plugin})
    assert not composition.failures
    found = [w for w in check_warnings(composition)[1] if "context-unannotated" in w]
    assert len(found) == 2, found
    assert all(f"parameter {name!r}" in w and "offered to the model" in w and "Context" in w for w in found), found
    schema = composition.catalog.tool("t").declaration.input_model.model_json_schema()  # type: ignore[union-attr]
    assert name in schema["properties"]  # still served as written: a warning, not a refusal


def test_an_annotated_ctx_or_a_typed_context_argument_is_not_warned_about() -> None:
    plugin = Plugin("ctxs", prefixes=["ctxs://"])

    @plugin.tool()
    def t(x: str, ctx: Context, context: str = "") -> str:
        """Uses its context; context is the model's own argument."""
        return x

    assert not [w for w in check_warnings(compose({"ctxs": plugin}))[1] if "context-unannotated" in w]


class _ForeignContext:
    """FastMCP's ``Context``, say: a class of that name the decorators do not pass."""


_ForeignContext.__name__ = _ForeignContext.__qualname__ = "Context"


def test_another_frameworks_context_class_is_refused_naming_ours() -> None:
    plugin = Plugin("ctxs", prefixes=["ctxs://"])

    def t(x: str, ctx: _ForeignContext) -> str:
        """Uses the wrong Context."""
        return x

    plugin.tool()(t)
    failures = compose({"ctxs": plugin}, strict=False).failures
    assert any(
        "parameter 'ctx' is annotated" in f and "from mcp_providers.plugin import Context" in f for f in failures
    ), failures


# a URI with a variable declared as a fixed resource; a variable spelled near a parameter


def test_a_fixed_resource_whose_uri_has_a_variable_is_told_to_use_template() -> None:
    plugin = Plugin("items", prefixes=["items://"])

    @plugin.resource("items://all/{id}")
    def item(id: str) -> str:
        return id

    failures = compose({"items": plugin}, strict=False).failures
    assert any(
        "'items://all/{id}' has a variable" in f and "declare it with @items.template('items://all/{id}')" in f
        for f in failures
    ), failures


@pytest.mark.parametrize(
    ("template", "parameter", "variable"),
    [("fc://{city}/{day}", "date", "day"), ("fc://{city}/{userId}", "userid", "userId")],
)
def test_a_template_variable_spelled_near_a_parameter_is_told_the_rename(
    template: str, parameter: str, variable: str
) -> None:
    plugin = Plugin("fc", prefixes=["fc://"])
    namespace: dict[str, Any] = {}
    exec(f"def f(city: str, {parameter}: str) -> str:\n    return city", namespace)
    plugin.template(template)(namespace["f"])
    failures = compose({"fc": plugin}, strict=False).failures
    assert any(f"rename parameter {parameter} to {variable}" in f for f in failures), failures


def test_a_template_variable_near_no_parameter_is_told_to_add_it() -> None:
    plugin = Plugin("fc", prefixes=["fc://"])

    @plugin.template("fc://{city}/{x}")
    def f(city: str, reading_level: str = "") -> str:
        return city

    failures = compose({"fc": plugin}, strict=False).failures
    assert any("no parameter of that name; add x: str" in f for f in failures), failures


# testing.check() and assert_check_passes() report what the CLI's check warns about


def _not_canonical() -> Plugin:
    plugin = Plugin("spelt", prefixes=["spelt://"])
    plugin.resource("SPELT://x")(lambda: "x")
    return plugin


@pytest.mark.anyio
async def test_testing_check_returns_the_warnings_the_cli_prints() -> None:
    lines = await check(compose({"spelt": _not_canonical()}))
    assert len(lines) == 1 and lines[0].startswith("warning: spelt: uri-not-canonical: 'SPELT://x'"), lines


def test_assert_check_passes_passes_a_warning_unless_told_otherwise() -> None:
    composition = compose({"spelt": _not_canonical()})
    assert_check_passes(composition)
    with pytest.raises(AssertionError, match=r"(?s)check failed:\nwarning: spelt: uri-not-canonical"):
        assert_check_passes(composition, warnings_pass=False)


@pytest.mark.anyio
@pytest.mark.parametrize("optional", ["Context | None", "typing.Optional[Context]"])
async def test_an_optional_context_receives_the_context_not_a_model_argument(optional: str) -> None:
    plugin = Plugin("ctxs", prefixes=["ctxs://"])
    namespace: dict[str, Any] = {"Context": Context, "typing": typing}
    exec(f"def t(x: str, ctx: {optional} = None) -> str:\n    'Who asks.'\n    return ctx.subject", namespace)
    plugin.tool()(namespace["t"])
    composition = compose({"ctxs": plugin})
    schema = composition.catalog.tool("t").declaration.input_model.model_json_schema()  # type: ignore[union-attr]
    assert list(schema["properties"]) == ["x"]
    async with connect(composition) as client:
        result = await client.call_tool("t", {"x": "a"})
    assert result.content[0].text == "local", result  # type: ignore[union-attr]


def test_a_plugin_named_otherwise_than_its_entry_point_is_a_check_warning() -> None:
    """Operators write ``[plugins.<entry-point name>]`` while the providers, the tool list's origin
    and the skills' URIs carry the ``Plugin``'s own name: two names for one plugin."""
    plugin = Plugin("weather", prefixes=["weather://"])

    @plugin.resource("weather://index")
    def index() -> str:
        return "sunny"

    @plugin.tool()
    def forecast(city: str) -> str:
        """Tomorrow's weather in a city."""
        return city

    found = [w for w in check_warnings(compose({"forecasts": plugin}))[1] if "plugin-name-differs" in w]
    assert len(found) == 1, found  # once per plugin, not per provider
    assert "Plugin('weather')" in found[0] and "'forecasts'" in found[0] and "[plugins.forecasts]" in found[0]
    assert "Plugin('forecasts')" in found[0], found[0]  # the fix names the spelling to use
    for same in ("weather", "weather_now"):  # dashes and underscores are one name's two spellings
        named = Plugin(same.replace("_", "-"), prefixes=["weather://"])
        named.resource("weather://index")(index)
        assert not [w for w in check_warnings(compose({same: named}))[1] if "plugin-name-differs" in w]


class _Caller:
    def __call__(self, city: str) -> str:
        """Tomorrow's weather in a city."""
        return city


def _forecast(city: str, days: int) -> str:
    """Tomorrow's weather in a city."""
    return city


@pytest.mark.parametrize("thing", [_Caller(), functools.partial(_forecast, days=1)], ids=["object", "partial"])
def test_a_callable_that_is_no_function_is_refused_saying_to_decorate_a_def(thing: Any) -> None:
    """Tester twenty-eight F12: the message said to import names at module level, which was no fix."""
    plugin = Plugin("weather", prefixes=["weather://"])
    with pytest.raises(Exception, match=r"not a function.*decorate a def or async def") as refused:
        plugin.tool(name="forecast", description="Tomorrow's weather.")(thing)
        compose({"weather": plugin}, strict=True)
    assert "import the names" not in str(refused.value)
