"""JSON Schemas from elsewhere (an upstream's tool listing, an OpenAPI document) are checked without
costing the server: no reference is fetched, no pattern runs in Python's backtracking ``re``, and a
schema that loops is an error, not a crash (``mcp_providers.plugins._schemas``).

Found by a tester: a tool whose ``inputSchema`` pattern was ``(a+)+$`` held the whole server for
33 s on one 28-character argument; a ``$ref`` to ``http://...`` made the server fetch it at every
call (and hang on a host that never answers); ``{"$ref": "#"}`` made every call a -32603.
"""

from __future__ import annotations

import contextlib
import re
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from pydantic import ValidationError

from mcp_providers.plugins._schemas import SchemaLoop, UnsafeSchema, search, validator
from mcp_providers.plugins.openapi.schema import arguments_model
from mcp_providers.plugins.upstream.mapping import schema_model

EVIL = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(a+)+$"}}}


@contextlib.contextmanager
def _untouched(matching: bool = True) -> Iterator[list[str]]:
    """Record any use of ``urllib`` fetching inside the block, and of Python's ``re`` matching
    unless ``matching`` is false (making a validator checks the schema against its meta-schema,
    whose own patterns are ``jsonschema``'s, with ``re``)."""
    reached: list[str] = []

    def recording(name: str) -> Callable[..., Any]:
        def use(*args: Any, **kwargs: Any) -> Any:
            reached.append(f"{name}{args[:2]!r}")
            raise AssertionError(f"{name} reached")

        return use

    with contextlib.ExitStack() as patched:
        patched.enter_context(mock.patch.object(urllib.request, "urlopen", recording("urlopen")))
        if matching:
            patched.enter_context(mock.patch.object(re, "search", recording("re.search")))
            patched.enter_context(mock.patch.object(re, "match", recording("re.match")))
        yield reached


def _outcome(call: Callable[[], Any], *, matching: bool = True) -> tuple[Any, list[str]]:
    """``call()``'s result or the exception it raised, and what of ``re``/``urllib`` it reached."""
    with _untouched(matching) as reached:
        try:
            outcome: Any = call()
        except Exception as exc:
            outcome = exc
    return outcome, reached


@pytest.mark.parametrize("make", [schema_model, arguments_model], ids=["upstream", "openapi"])
def test_a_catastrophic_pattern_is_matched_without_python_re(make: Any) -> None:
    model = make("Evil", EVIL)
    refused, reached = _outcome(lambda: model.model_validate({"x": "a" * 5000 + "!"}))  # re: forever
    assert reached == [] and isinstance(refused, ValidationError)
    said = refused.errors()[0]["msg"]  # what the call's -32602 says (pydantic's input echo is not sent)
    assert said == "Value error, x: does not match the pattern '(a+)+$'", said
    kept, reached = _outcome(lambda: model.model_validate({"x": "aaaa"}))
    assert reached == [] and kept.model_dump() == {"x": "aaaa"}


def test_pattern_properties_and_the_names_additional_properties_compares_are_matched_linearly() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    model = schema_model("Named", schema)
    kept, reached = _outcome(lambda: model.model_validate({"aaa": 1}))
    assert reached == [] and kept.model_dump() == {"aaa": 1}
    wrong, reached = _outcome(lambda: model.model_validate({"aaaa": "x"}))
    assert reached == [] and "is not of type 'integer'" in str(wrong)
    extra, reached = _outcome(lambda: model.model_validate({"a" * 40 + "!": 1}))
    assert reached == [] and "Additional properties are not allowed ('" + "a" * 40 in str(extra)


def test_patterns_match_anywhere_as_json_schema_says() -> None:
    assert search("b", "abc") and not search("^b", "abc") and search("^a.c$", "abc")


@pytest.mark.parametrize("pattern", ["(?=a)b", r"(a)\1", "(?<!x)y"])
def test_a_pattern_that_cannot_run_in_linear_time_is_refused_when_made(pattern: str) -> None:
    with pytest.raises(UnsafeSchema, match="cannot be checked in linear time"):
        validator({"type": "string", "pattern": pattern})


@pytest.mark.parametrize(
    "ref",
    ["http://127.0.0.1:9/x.json", "https://example.com/s#/x", "other.json#/defs/a", "//host/x"],
)
@pytest.mark.parametrize("key", ["$ref", "$dynamicRef"])
def test_a_reference_outside_the_schema_is_refused_and_nothing_is_fetched(ref: str, key: str) -> None:
    schema = {"type": "object", "properties": {"x": {key: ref}}}
    for make in (schema_model, arguments_model):
        refused, reached = _outcome(lambda make=make: make("Remote", schema), matching=False)
        assert reached == [] and isinstance(refused, UnsafeSchema) and "nothing is fetched" in str(refused)


def test_a_reference_that_does_not_resolve_within_the_schema_fetches_nothing() -> None:
    schema = {"$id": "http://127.0.0.1:9/root.json", "properties": {"x": {"$ref": "#/$defs/missing"}}}
    model = schema_model("Unresolved", schema)  # {} never reaches the reference
    refused, reached = _outcome(lambda: model.model_validate({"x": 1}), matching=False)
    assert reached == [] and isinstance(refused, ValidationError), refused
    said = refused.errors()[0]["msg"]
    assert "a reference that does not resolve within it ('/$defs/missing'); nothing is fetched" in said, said


def test_references_within_the_schema_are_followed() -> None:
    schema = {"type": "object", "$defs": {"n": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/n"}}}
    model = schema_model("Local", schema)
    with pytest.raises(ValidationError, match="is not of type 'integer'"):
        model.model_validate({"x": "one"})


def test_a_schema_that_refers_to_itself_without_end_is_refused_when_made() -> None:
    for make in (schema_model, arguments_model):
        with pytest.raises(UnsafeSchema, match="refers to itself without end"):
            make("Loop", {"type": "object", "$ref": "#"})


def test_a_loop_reached_only_by_a_value_is_a_named_error_not_a_crash() -> None:
    schema = {
        "type": "object",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    }
    model = schema_model("Deep", schema)  # {} never reaches the loop
    with pytest.raises(ValidationError, match="refers to itself without end"):
        model.model_validate({"x": 1})
    assert issubclass(SchemaLoop, ValueError)  # pydantic turns it into the call's -32602
