"""Issue 42 (build 11): Redis's password, or its whole URL, from an environment variable (a Secret
under Kubernetes) instead of the config file: ``[cluster] password_env`` and ``redis_url_env``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from real_parts import redis_server

from mcp_providers._serve.state.cluster import RedisBackend
from mcp_providers.config import ClusterSettings
from mcp_providers.errors import ConfigError

pytestmark = pytest.mark.anyio

PASSWORD = "p@ss:w/rd-" + "3e" * 12  # characters a URL must escape


def test_the_password_from_its_variable_takes_the_urls_place_escaped() -> None:
    settings = ClusterSettings(redis_url="redis://app@redis:6379/2", key_prefix="p", password_env="REDIS_PW")
    url = settings.connection_url({"REDIS_PW": PASSWORD})
    assert url == "redis://app:p%40ss%3Aw%2Frd-" + "3e" * 12 + "@redis:6379/2"
    kept = ClusterSettings(redis_url="rediss://:old@redis:6380/0", key_prefix="p", password_env="REDIS_PW")
    assert kept.connection_url({"REDIS_PW": "new"}) == "rediss://:new@redis:6380/0"
    whole = ClusterSettings(redis_url_env="REDIS_URL", key_prefix="p")
    assert whole.connection_url({"REDIS_URL": "redis://:x@redis:6379/0"}) == "redis://:x@redis:6379/0"


@pytest.mark.parametrize(
    ("fields", "env", "says"),
    [
        ({"redis_url": "redis://r:6379/0", "password_env": "REDIS_PW"}, {}, "$REDIS_PW is unset or empty"),
        ({"redis_url": "redis://r:6379/0", "password_env": "REDIS_PW"}, {"REDIS_PW": ""}, "$REDIS_PW is unset"),
        ({"redis_url_env": "REDIS_URL"}, {}, "$REDIS_URL is unset or empty; set it to the Redis URL"),
        ({"redis_url_env": "REDIS_URL"}, {"REDIS_URL": "http://" + PASSWORD}, "not a redis:// or rediss:// URL"),
    ],
)
def test_a_variable_that_is_missing_or_wrong_is_named_and_its_value_never_shown(
    fields: dict[str, str], env: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigError, match=r"\[cluster\]") as refused:
        ClusterSettings(key_prefix="p", **fields).connection_url(env)
    assert says in str(refused.value) and PASSWORD not in str(refused.value)


@pytest.mark.parametrize(
    "fields", [{}, {"redis_url": "redis://r:6379/0", "redis_url_env": "REDIS_URL"}], ids=["neither", "both"]
)
def test_cluster_takes_exactly_one_of_the_url_or_its_variable(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match=r"one of redis_url \(the URL\) or redis_url_env"):
        ClusterSettings.model_validate({"key_prefix": "p", **fields})


async def test_a_replica_reaches_a_redis_that_asks_for_a_password_given_by_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with redis_server(PASSWORD) as (url_with_password, _):
        bare = "redis://" + url_with_password.rpartition("@")[2]  # the config file holds no password
        settings = ClusterSettings(redis_url=bare, key_prefix="pw", password_env="REDIS_PW", timeout_seconds=2)
        for password, answers in (("wrong", False), (PASSWORD, True)):  # a wrong one: AUTH refuses it
            monkeypatch.setenv("REDIS_PW", password)
            backend = RedisBackend(settings)
            try:
                assert await backend.ping() is answers, password
            finally:
                await backend.aclose()
