"""Tester nineteen: the unknown-key refusal judged by how a settings model was written, so valid
tables were refused (a validator that reshapes nested keys, one inside a named type alias, an
after-validator reordering a list of a union) and typos slipped through (nested dataclasses,
TypedDicts, ``dict[int, Model]``). Each shape is tried in both directions: its valid table loads,
and a typo the model would drop is refused."""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict, defaultdict, deque
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Annotated, Any, Literal, NamedTuple

import pytest
from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    RootModel,
    Tag,
    WrapValidator,
    field_validator,
    with_config,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypeAliasType, TypedDict

from mcp_providers.config.ignored import ignored_keys
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose


def _reason(model: type[BaseModel], table: dict[str, Any]) -> str | None:
    plugin = Plugin("shapes", prefixes=["shapes://"], settings=model)
    plugin.resource("shapes://x")(lambda: "x")
    composition = compose({"shapes": plugin}, {"shapes": table}, strict=False)
    record = {r.name: r for r in composition.records}["shapes"]
    return None if record.status == "loaded" else (record.reason or "?")


def _refused(model: type[BaseModel], table: dict[str, Any], where: str) -> str:
    reason = _reason(model, table)
    assert reason is not None, f"plugins.shapes.{where} was dropped silently"
    assert f"plugins.shapes.{where}: unknown key" in reason, reason
    return reason


def _lower(value: Any) -> Any:
    return {str(k).lower(): v for k, v in value.items()} if isinstance(value, dict) else value


class Auth(BaseModel):
    user: str
    password: str = ""


# -- field validators that reshape a nested table: the table is valid --


NOBODY = Auth(user="")


class StarLower(BaseModel):
    auth: Auth = NOBODY

    @field_validator("*", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return _lower(value)


class NamedWrap(BaseModel):
    auth: Auth = NOBODY

    @field_validator("auth", mode="wrap")
    @classmethod
    def _lower(cls, value: Any, handler: Any) -> Any:
        return handler(_lower(value))


class NamedPlain(BaseModel):
    auth: Auth = NOBODY

    @field_validator("auth", mode="plain")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return Auth.model_validate(_lower(value))


@pytest.mark.parametrize("model", [StarLower, NamedWrap, NamedPlain], ids=["star-before", "wrap", "plain"])
def test_a_field_validator_that_renames_nested_keys_is_not_second_guessed(model: type[BaseModel]) -> None:
    assert _reason(model, {"auth": {"User": "x", "Password": "y"}}) is None
    _refused(model, {"auht": {"user": "x"}}, "auht")  # its own keys are still its fields


# -- a validator inside a named type alias: on a field, in a list, in a dict --


def _wrap_lower(value: Any, handler: Any) -> Any:
    return handler(_lower(value))


def _plain_lower(value: Any) -> Auth:
    return Auth.model_validate(_lower(value))


ALIASES = {
    "before": TypeAliasType("AuthBefore", Annotated[Auth, BeforeValidator(_lower)]),
    "wrap": TypeAliasType("AuthWrap", Annotated[Auth, WrapValidator(_wrap_lower)]),
    "plain": TypeAliasType("AuthPlain", Annotated[Auth, PlainValidator(_plain_lower)]),
}


def _alias_models(alias: Any) -> list[tuple[type[BaseModel], dict[str, Any], str]]:
    class OnField(BaseModel):
        auth: alias = NOBODY

    class InList(BaseModel):
        auths: list[alias] = []

    class InDict(BaseModel):
        auths: dict[str, alias] = {}

    valid = {"User": "x", "Password": "y"}
    return [
        (OnField, {"auth": valid}, "auht"),
        (InList, {"auths": [valid, {"user": "z"}]}, "auhts"),
        (InDict, {"auths": {"eu": valid}}, "auhts"),
    ]


@pytest.mark.parametrize("kind", sorted(ALIASES))
def test_a_validator_inside_a_type_alias_is_not_second_guessed(kind: str) -> None:
    for model, table, typo in _alias_models(ALIASES[kind]):
        assert _reason(model, table) is None, (model.__name__, table)
        _refused(model, {typo: next(iter(table.values()))}, typo)


# -- an after-validator reordering a list of a union: the input is judged, not the output --


class Remote(BaseModel):
    kind: str = "remote"
    url: str


class Local(BaseModel):
    kind: str = "local"
    path: str


def _by_kind(servers: list[Remote | Local]) -> list[Remote | Local]:
    return sorted(servers, key=lambda s: s.kind)


class Ordered(BaseModel):
    servers: Annotated[list[Remote | Local], AfterValidator(_by_kind)]


def test_an_after_validator_that_reorders_a_list_of_a_union_is_judged_on_the_input() -> None:
    assert _reason(Ordered, {"servers": [{"url": "http://x"}, {"path": "/p"}]}) is None
    reason = _refused(Ordered, {"servers": [{"url": "http://x"}, {"path": "/p", "tiemout": 3}]}, "servers.1.tiemout")
    assert "kind, path, url" in reason  # what either member of the union reads there


def _deduplicated(shards: list[Auth]) -> list[Auth]:
    return list({s.user: s for s in shards}.values())


class Dedup(BaseModel):
    shards: Annotated[list[Auth], AfterValidator(_deduplicated)]


def test_an_after_validator_that_drops_items_does_not_hide_a_typo_in_one() -> None:
    assert _reason(Dedup, {"shards": [{"user": "a"}, {"user": "a", "password": "p"}]}) is None
    _refused(Dedup, {"shards": [{"user": "a"}, {"user": "a", "pasword": "p"}]}, "shards.1.pasword")


# -- nested dataclasses and TypedDicts: a typo is dropped unless refused --


@dataclasses.dataclass
class StdTarget:
    host: str
    port: int = 80


@pydantic_dataclass
class PydanticTarget:
    host: str
    port: int = 80


class DictTarget(TypedDict, total=False):
    host: str
    port: int


class WithStd(BaseModel):
    target: StdTarget


class WithPydantic(BaseModel):
    target: PydanticTarget


class WithTypedDict(BaseModel):
    target: DictTarget


class WithTypedDicts(BaseModel):
    targets: list[DictTarget] = []


@pytest.mark.parametrize("model", [WithStd, WithPydantic, WithTypedDict], ids=["dataclass", "pydantic", "typeddict"])
def test_a_typo_in_a_nested_dataclass_or_typeddict_is_refused(model: type[BaseModel]) -> None:
    assert _reason(model, {"target": {"host": "h", "port": 81}}) is None
    reason = _refused(model, {"target": {"host": "h", "prot": "s3cret-81"}}, "target.prot")
    assert 'did you mean "port"?' in reason and "keys accepted here: host, port" in reason, reason
    assert "s3cret" not in reason


def test_a_typo_in_a_typeddict_inside_a_list_is_refused() -> None:
    assert _reason(WithTypedDicts, {"targets": [{"host": "h"}]}) is None
    _refused(WithTypedDicts, {"targets": [{"host": "h"}, {"hots": "h"}]}, "targets.1.hots")


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")
    target: StdTarget
    typed: DictTarget = {}


def test_a_nested_dataclass_or_typeddict_under_a_model_that_sets_extra_takes_its_word() -> None:
    assert _reason(Lenient, {"target": {"host": "h", "prot": 81}, "typed": {"hots": "h"}}) is None


# -- dicts keyed by what TOML cannot spell: the values' keys are still judged --


class Shard(BaseModel):
    host: str
    weight: int = 1


class Env(str, Enum):  # noqa: UP042 - a str-valued enum as written before StrEnum
    prod = "prod"
    dev = "dev"


class ByInt(BaseModel):
    shards: dict[int, Shard]


class ByEnum(BaseModel):
    envs: dict[Env, Shard]


class ByTuple(BaseModel):
    pairs: tuple[Shard, ...] = ()
    edge: tuple[int, Shard] | None = None


@pytest.mark.parametrize(
    ("model", "table", "where"),
    [
        (ByInt, {"shards": {"1": {"host": "a", "wieght": 5}}}, "shards.1.wieght"),
        (ByEnum, {"envs": {"prod": {"host": "a", "wieght": 5}}}, "envs.prod.wieght"),
        (ByTuple, {"pairs": [{"host": "a"}, {"host": "b", "wieght": 5}]}, "pairs.1.wieght"),
        (ByTuple, {"edge": [1, {"host": "a", "wieght": 5}]}, "edge.1.wieght"),
    ],
)
def test_a_typo_in_a_dict_or_tuple_of_models_is_refused(
    model: type[BaseModel], table: dict[str, Any], where: str
) -> None:
    _refused(model, table, where)


class FrozenShard(Shard):
    model_config = ConfigDict(frozen=True)


class Pair(NamedTuple):
    name: str
    shard: Shard


class Containers(BaseModel):
    seq: Sequence[Shard] = ()
    mapping: Mapping[int, Shard] = {}
    queue: deque[Shard] = deque()
    ordered: OrderedDict[str, Shard] = OrderedDict()
    groups: defaultdict[str, list[Shard]] = defaultdict(list)
    unique: frozenset[FrozenShard] = frozenset()
    pair: Pair | None = None
    root: RootModel[dict[str, Shard]] = RootModel[dict[str, Shard]]({})


CONTAINED = {
    "mapping": ({"1": {"host": "a"}}, "mapping.1"),
    "queue": ([{"host": "a"}], "queue.0"),
    "ordered": ({"x": {"host": "a"}}, "ordered.x"),
    "unique": ([{"host": "a"}], "unique.0"),
    "pair": ({"name": "n", "shard": {"host": "a"}}, "pair.shard"),
    "root": ({"r": {"host": "a"}}, "root.r"),
}


@pytest.mark.parametrize("field", sorted(CONTAINED))
def test_a_typo_in_a_model_inside_an_abstract_or_special_container_is_refused(field: str) -> None:
    value, where = CONTAINED[field]
    assert _reason(Containers, {field: value}) is None
    typo = json.loads(json.dumps(value).replace('"host": "a"', '"host": "a", "wieght": 2'))
    _refused(Containers, {field: typo}, f"{where}.wieght")


@pytest.mark.parametrize(("field", "value"), [("seq", [{"host": "a"}]), ("groups", {"g": [{"host": "a"}]})])
def test_a_container_behind_a_wrap_validator_refuses_nothing(field: str, value: Any) -> None:
    """``Sequence`` and ``defaultdict`` reach their items through wrap validators of pydantic's;
    telling them from one that reshapes would take a private name of pydantic's: not judged."""
    typo = json.loads(json.dumps(value).replace('"host": "a"', '"host": "a", "wieght": 2'))
    assert _reason(Containers, {field: typo}) is None


def test_dicts_and_tuples_of_models_still_load() -> None:
    assert _reason(ByInt, {"shards": {"1": {"host": "a", "weight": 5}}}) is None
    assert _reason(ByTuple, {"pairs": [{"host": "a"}], "edge": [1, {"host": "a"}]}) is None


# -- unions: a key is refused only when every member pydantic could have chosen would drop it --


class Either(BaseModel):
    server: Remote | Local
    endpoint: Shard | str = ""


def test_a_key_one_union_member_reads_is_not_refused_and_one_none_reads_is() -> None:
    assert _reason(Either, {"server": {"path": "/p"}, "endpoint": {"host": "h"}}) is None
    _refused(Either, {"server": {"url": "u", "tiemout": 1}}, "server.tiemout")
    _refused(Either, {"server": {"url": "u"}, "endpoint": {"host": "h", "wieght": 2}}, "endpoint.wieght")


class OneOrMany(BaseModel):
    shards: Shard | list[Shard] | None = None
    limit: int | dict[str, int] = 0


def test_a_union_member_that_cannot_take_the_tables_shape_is_not_counted() -> None:
    """``Model | list[Model]``: a table is never the list, an array never the model."""
    assert _reason(OneOrMany, {"shards": {"host": "a"}, "limit": {"eu": 1}}) is None
    assert _reason(OneOrMany, {"shards": [{"host": "a"}]}) is None
    _refused(OneOrMany, {"shards": {"host": "a", "wieght": 1}}, "shards.wieght")
    _refused(OneOrMany, {"shards": [{"host": "a", "wieght": 1}]}, "shards.0.wieght")


class Tagged(BaseModel):
    server: Annotated[
        Annotated[Remote, Tag("remote")] | Annotated[Local, Tag("local")],
        Discriminator(lambda v: v.get("kind", "remote") if isinstance(v, dict) else getattr(v, "kind", None)),
    ]


class RemoteKind(BaseModel):
    kind: Literal["remote"]
    url: str


class LocalKind(BaseModel):
    kind: Literal["local"]
    path: str = ""
    url: str = ""


class ByTag(BaseModel):
    server: RemoteKind | LocalKind = Field(discriminator="kind")


def test_a_discriminated_union_judges_the_member_its_tag_chose() -> None:
    assert _reason(ByTag, {"server": {"kind": "local", "path": "/p", "url": "u"}}) is None
    # the other member reads path, but the tag chose the one that does not
    _refused(ByTag, {"server": {"kind": "remote", "url": "u", "path": "/p"}}, "server.path")
    assert _reason(Tagged, {"server": {"kind": "local", "path": "/p"}}) is None
    _refused(Tagged, {"server": {"url": "u", "tiemout": 1}}, "server.tiemout")


# -- what the walk cannot follow: pydantic's word stands --


class OwnInit(BaseModel):
    auth: Auth

    def __init__(self, **data: Any) -> None:
        super().__init__(**{str(k).lower(): v for k, v in data.items()})


def test_a_model_with_its_own_init_is_not_second_guessed() -> None:
    assert _reason(OwnInit, {"AUTH": {"user": "x"}}) is None


class OwnValidate(BaseModel):
    auth: Auth

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> OwnValidate:  # type: ignore[override]
        return super().model_validate(_lower(obj), **kwargs)


def test_a_model_with_its_own_model_validate_is_not_second_guessed() -> None:
    assert _reason(OwnValidate, {"AUTH": {"user": "x"}}) is None


# -- what pydantic reads, not what the model names --


@dataclasses.dataclass
class Derived:
    host: str
    port: int = dataclasses.field(default=80, init=False)


class WithDerived(BaseModel):
    target: Derived


def test_a_dataclass_field_outside_init_is_not_an_accepted_key() -> None:
    """pydantic drops a key naming a dataclass field with ``init=False``: the port never applies."""
    assert _reason(WithDerived, {"target": {"host": "h"}}) is None
    reason = _refused(WithDerived, {"target": {"host": "h", "port": 81}}, "target.port")
    assert "keys accepted here: host" in reason, reason


@pydantic_dataclass(config=ConfigDict(extra="allow"))
class OpenTarget:
    host: str


@with_config(ConfigDict(extra="ignore"))
class OpenDict(TypedDict, total=False):
    host: str


class WithOwnConfig(BaseModel):
    target: OpenTarget
    typed: OpenDict = {}


def test_a_nested_dataclass_or_typeddict_that_sets_extra_itself_takes_its_word() -> None:
    assert _reason(WithOwnConfig, {"target": {"host": "h", "prot": 1}, "typed": {"hots": "h"}}) is None
    _refused(WithOwnConfig, {"target": {"host": "h"}, "typd": {}}, "typd")


class Pathed(BaseModel):
    primary: Shard | None = Field(None, validation_alias=AliasPath("servers", 0))
    backup: Shard | None = Field(None, validation_alias=AliasChoices("backup", AliasPath("servers", 1)))


def test_a_field_read_through_an_alias_path_is_judged_where_the_path_leads() -> None:
    assert _reason(Pathed, {"servers": [{"host": "a"}]}) is None
    _refused(Pathed, {"servers": [{"host": "a", "wieght": 1}]}, "servers.0.wieght")
    assert _reason(Pathed, {"servers": [{"host": "a"}, {"host": "b"}]}) is None
    _refused(Pathed, {"servers": [{"host": "a"}, {"host": "b", "wieght": 1}]}, "servers.1.wieght")
    _refused(Pathed, {"backup": {"host": "b", "wieght": 1}}, "backup.wieght")


def test_a_schema_the_walk_does_not_know_refuses_nothing() -> None:
    class Odd(BaseModel):
        shard: Shard | None = None

    broken = {"type": "model", "schema": {"type": "model-fields", "fieldz": {}}}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Odd, "__pydantic_core_schema__", broken)
        assert ignored_keys(Odd, {"shard": {"host": "a"}, "odd": 1}) == []
    assert ignored_keys(Odd, {"odd": 1}) == [(("odd",), ("shard",))]
