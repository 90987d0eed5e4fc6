"""A mistyped key in a plugin's ``[plugins.NAME]`` table is refused even when the plugin's settings
model leaves pydantic's default ``extra`` (``ignore``), which would drop it silently so the
operator's setting never applied. A model that sets ``extra`` itself is taken at its word."""

from __future__ import annotations

import os
import subprocess
import types
from pathlib import Path
from typing import Annotated, Any

import pytest
from prefork import python
from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from mcp_providers import hookimpl
from mcp_providers.plugin import Plugin
from mcp_providers.testing import compose


class Timing(BaseModel):
    timeout: float = 5.0
    retries: int = 1


class Settings(BaseModel):
    instance: str = "dev"
    limit: int = 10
    timing: Timing = Timing()
    backends: dict[str, Timing] = {}
    mirrors: list[Timing] = []


def _plugin(model: type[BaseModel] | None = Settings, name: str = "notes") -> Plugin:
    plugin = Plugin(name, prefixes=[f"{name}://"], settings=model)
    plugin.resource(f"{name}://x")(lambda: "x")
    return plugin


def _reason(plugin: object, table: dict[str, Any], name: str = "notes") -> str | None:
    composition = compose({name: plugin}, {name: table}, strict=False)
    record = {r.name: r for r in composition.records}[name]
    if record.status == "loaded":
        return None
    assert record.reason is not None
    return record.reason


def test_a_mistyped_key_is_refused_naming_key_plugin_accepted_keys_and_a_close_match() -> None:
    reason = _reason(_plugin(), {"instanse": "prod"})
    assert reason is not None, "the mistyped key was dropped silently"
    assert reason.startswith("invalid settings: plugins.notes.instanse: unknown key"), reason
    assert 'did you mean "instance"?' in reason
    assert "backends, instance, limit, mirrors, timing" in reason
    assert "prod" not in reason  # an unknown key's value may be a mistyped secret


def test_a_correct_table_still_loads_and_its_values_apply() -> None:
    plugin = _plugin()
    assert _reason(plugin, {"instance": "prod", "timing": {"timeout": 1}, "backends": {"a": {"retries": 2}}}) is None


@pytest.mark.parametrize(
    ("table", "where", "close"),
    [
        ({"timing": {"timout": 1}}, "plugins.notes.timing.timout", "timeout"),
        ({"backends": {"eu": {"retires": 3}}}, "plugins.notes.backends.eu.retires", "retries"),
        ({"mirrors": [{"timeout": 1}, {"timeuot": 2}]}, "plugins.notes.mirrors.1.timeuot", "timeout"),
    ],
)
def test_a_mistyped_key_in_a_nested_table_is_refused(table: dict[str, Any], where: str, close: str) -> None:
    reason = _reason(_plugin(), table)
    assert reason is not None, f"{where} was dropped silently"
    assert f"{where}: unknown key" in reason and f'did you mean "{close}"?' in reason, reason
    assert "retries, timeout" in reason  # what the nested table accepts


@pytest.mark.parametrize("extra", ["ignore", "allow"])
def test_a_model_that_sets_extra_itself_is_respected(extra: str) -> None:
    class Lenient(BaseModel):
        model_config = ConfigDict(extra=extra)  # type: ignore[typeddict-item]
        instance: str = "dev"

    assert _reason(_plugin(Lenient), {"instanse": "prod"}) is None


def test_a_nested_model_that_sets_extra_itself_is_respected_and_its_parent_still_checked() -> None:
    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        timeout: float = 5.0

    class Outer(BaseModel):
        instance: str = "dev"
        timing: Open = Open()

    assert _reason(_plugin(Outer), {"timing": {"anything": 1}}) is None
    reason = _reason(_plugin(Outer), {"timing": {"anything": 1}, "instanc": "x"})
    assert reason is not None and "plugins.notes.instanc: unknown key" in reason and "anything" not in reason


def test_a_base_class_that_sets_extra_counts_as_set() -> None:
    class Base(BaseModel):
        model_config = ConfigDict(extra="ignore")

    class Child(Base):
        instance: str = "dev"

    assert _reason(_plugin(Child), {"instanse": "prod"}) is None


def test_aliases_are_accepted_keys() -> None:
    class Aliased(BaseModel):
        base_url: str = Field("x", alias="base-url")
        region: str = Field("eu", validation_alias=AliasChoices("region", "zone"))

    assert _reason(_plugin(Aliased), {"base-url": "https://a", "zone": "us"}) is None
    reason = _reason(_plugin(Aliased), {"base_ur": "https://a"})
    assert reason is not None and "plugins.notes.base_ur: unknown key" in reason


def test_a_model_reshaping_its_input_before_validation_is_not_second_guessed() -> None:
    class Legacy(BaseModel):
        instance: str = "dev"

        @model_validator(mode="before")
        @classmethod
        def _old_name(cls, data: Any) -> Any:
            if isinstance(data, dict) and "host" in data:
                data = {**data, "instance": data["host"]}
                data.pop("host")
            return data

    assert _reason(_plugin(Legacy), {"host": "prod"}) is None


def test_a_hand_written_settings_model_hookimpl_is_checked_the_same() -> None:
    module = types.ModuleType("hand_settings_mod")

    @hookimpl
    def settings_model() -> type[BaseModel]:
        return Settings

    module.settings_model = settings_model  # type: ignore[attr-defined]
    reason = _reason(module, {"limt": 3}, name="hand")
    assert reason is not None and "plugins.hand.limt: unknown key" in reason and 'did you mean "limit"?' in reason


def test_a_forbidding_model_lists_its_keys_too() -> None:
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        instance: str = "dev"
        limit: int = 1

    reason = _reason(_plugin(Strict), {"instanse": "prod"})
    assert reason is not None and 'did you mean "instance"?' in reason and "instance, limit" in reason, reason


PLUGIN_SOURCE = """
from pydantic import BaseModel
from mcp_providers.plugin import Plugin


class Settings(BaseModel):
    instance: str = "dev"


typo = Plugin("typo", prefixes=["typo://"], settings=Settings)
typo.resource("typo://x")(lambda: "x")
"""


def test_check_and_strict_serve_refuse_a_mistyped_key(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "typo_dist-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-dist\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mcp_providers]\ntypo = typo_settings_mod:typo\n")
    (site / "typo_settings_mod.py").write_text(PLUGIN_SOURCE)
    config = tmp_path / "config.toml"
    config.write_text('allow = ["typo"]\n[plugins.typo]\ninstanse = "prod"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_PROVIDERS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*python(), "-m", "mcp_providers", *args, "-c", str(config)]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)

    checked = cli("check")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "plugins.typo.instanse: unknown key" in checked.stdout and 'did you mean "instance"?' in checked.stdout
    strict = cli("serve", "--strict")
    assert strict.returncode == 1 and "plugins.typo.instanse: unknown key" in strict.stderr, strict.stderr


def test_a_field_whose_validator_reshapes_its_table_is_not_second_guessed() -> None:
    class Reshaped(BaseModel):
        timing: Timing = Timing()

        @field_validator("timing", mode="before")
        @classmethod
        def _short(cls, value: Any) -> Any:
            return {"timeout": value["t"]} if isinstance(value, dict) and "t" in value else value

    assert _reason(_plugin(Reshaped), {"timing": {"t": 2}}) is None
    reason = _reason(_plugin(Reshaped), {"timng": {"t": 2}})
    assert reason is not None and "plugins.notes.timng: unknown key" in reason


def _short_form(value: Any) -> Any:
    """``{host = "h"}`` as shorthand for ``{url = "http://h"}``."""
    if isinstance(value, dict) and "host" in value:
        value = {**{k: v for k, v in value.items() if k != "host"}, "url": f"http://{value['host']}"}
    return value


class Endpoint(BaseModel):
    url: str = ""
    timeout: float = 5.0


class AnnotatedShortForm(BaseModel):
    endpoint: Annotated[Endpoint, BeforeValidator(_short_form)] = Endpoint()
    mirrors: tuple[Annotated[Endpoint, BeforeValidator(_short_form)], ...] = ()


def test_a_validator_attached_with_annotated_is_not_second_guessed() -> None:
    """Tester eighteen: a valid short form read by an ``Annotated[..., BeforeValidator(...)]`` (on
    the field, or inside its type) was refused as an unknown key."""
    table = {"endpoint": {"host": "example.org"}, "mirrors": [{"host": "m.example.org"}]}
    assert _reason(_plugin(AnnotatedShortForm), table) is None


class Aliased(BaseModel):
    api_key: str = Field("", alias="apiKey")
    region: str = Field("eu", validation_alias="aws_region")


class AliasedByName(Aliased):
    model_config = ConfigDict(validate_by_name=True)


def test_a_field_name_pydantic_ignores_beside_its_alias_is_refused() -> None:
    """Tester eighteen: with an alias and no validation by name, pydantic ignores the field's own
    name, so ``api_key = "..."`` was dropped silently (here a secret) while counted as accepted."""
    said = _reason(_plugin(Aliased), {"api_key": "s3cret", "region": "us"}) or ""
    assert "plugins.notes.api_key: unknown key" in said and "plugins.notes.region: unknown key" in said
    assert "s3cret" not in said and "keys accepted here: apiKey, aws_region" in said
    assert _reason(_plugin(Aliased), {"apiKey": "k", "aws_region": "us"}) is None
    assert _reason(_plugin(AliasedByName), {"api_key": "k", "region": "us"}) is None


def test_a_mistyped_key_inside_a_root_model_field_is_refused() -> None:
    """The walk looks through a RootModel (the core no longer imports pydantic's ``root_model`` for
    it, issue 43): a RootModel value exists only once its module is imported."""
    from pydantic import RootModel

    class Mirrors(RootModel[list[Timing]]):
        pass

    class WithRoot(BaseModel):
        mirrors: Mirrors = Mirrors([])

    reason = _reason(_plugin(WithRoot), {"mirrors": [{"timeout": 1.0, "retriez": 3}]})
    assert reason is not None, "the mistyped key under a RootModel was dropped silently"
    assert "plugins.notes.mirrors.0.retriez: unknown key" in reason, reason
