"""Settings of ``jwt_bearer`` instances (each caller as their own ServiceNow user): shape and errors."""

from __future__ import annotations

import logging
import tomllib
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_providers.plugins.servicenow import settings as module
from mcp_providers.plugins.servicenow.settings import InstanceSettings, JwtBearerAuth, ServiceNowSettings

JWT = {"type": "jwt_bearer", "client_id": "mcp-obo", "client_secret_env": "SN_OBO_SECRET",
       "private_key_env": "SN_OBO_KEY"}  # fmt: skip


def instance(**auth: Any) -> dict[str, Any]:
    return {"name": "corp", "url": "https://corp.service-now.com", "auth": {**JWT, **auth}}


def test_the_documented_example_validates():
    doc = JwtBearerAuth.__doc__ or ""
    example = doc.split("test_jwt_bearer_settings.py``)::\n", 1)[1]
    table = tomllib.loads("\n".join(line.removeprefix("        ") for line in example.splitlines()))
    settings = ServiceNowSettings.model_validate(table["plugins"]["servicenow"])
    (corp,) = settings.instances
    assert corp.per_user and isinstance(corp.auth, JwtBearerAuth)
    assert (corp.auth.client_id, corp.auth.user_claim, corp.auth.local_user) == ("mcp-on-behalf", "email", None)


def test_defaults_and_mixing_with_service_accounts():
    settings = ServiceNowSettings.model_validate({"instances": [
        instance(), {"name": "dev", "url": "https://dev.service-now.com",
                     "auth": {"type": "basic", "username": "u", "password_env": "SN_PW"}}]})  # fmt: skip
    corp, dev = settings.instances
    assert corp.per_user and not dev.per_user
    assert isinstance(corp.auth, JwtBearerAuth)
    auth = corp.auth
    assert (auth.user_claim, auth.audience, auth.token_path, auth.assertion_seconds) == (
        "email",
        "client_id",
        "/oauth_token.do",
        300,
    )
    assert module.secret_variables(corp) == [("auth.client_secret_env", "SN_OBO_SECRET"),
                                             ("auth.private_key_env", "SN_OBO_KEY")]  # fmt: skip


def test_client_id_from_the_environment_instead():
    auth = InstanceSettings.model_validate(instance(client_id=None, client_id_env="SN_OBO_ID")).auth
    assert isinstance(auth, JwtBearerAuth) and auth.client_id_env == "SN_OBO_ID"
    assert ("auth.client_id_env", "SN_OBO_ID") in module.secret_variables(
        InstanceSettings.model_validate(instance(client_id=None, client_id_env="SN_OBO_ID"))
    )


@pytest.mark.parametrize(
    ("auth", "why"),
    [
        ({"client_id": None}, "exactly one of client_id"),
        ({"client_id_env": "SN_OBO_ID"}, "exactly one of client_id"),
        ({"private_key_env": None}, "private_key_env"),
        ({"client_secret_env": None}, "client_secret_env"),
        ({"private_key_env": "-----BEGIN PRIVATE KEY-----"}, "private_key_env"),  # a value, not a variable name
        ({"user_claim": "e mail"}, "user_claim"),
        ({"user_claim": ""}, "user_claim"),
        ({"local_user": ""}, "local_user"),
        ({"audience": "anything"}, "audience"),
        ({"assertion_seconds": 5}, "assertion_seconds"),
        ({"private_key": "PEM"}, "private_key"),  # keys are never in the config file
        ({"client_secret": "s3cret-value"}, "client_secret"),
    ],
)
def test_refused_shapes_say_which_setting(auth, why):
    table = instance(**auth)
    table["auth"] = {k: v for k, v in table["auth"].items() if v is not None}
    with pytest.raises(ValidationError, match=why):
        InstanceSettings.model_validate(table)


def test_a_refused_secret_never_appears_in_the_error():
    with pytest.raises(ValidationError) as refused:
        InstanceSettings.model_validate(instance(client_secret="s3cret-value-9f1e"))
    assert "s3cret-value-9f1e" not in str(refused.value)


def test_unset_grant_secrets_are_warned_about(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    monkeypatch.delenv("SN_OBO_SECRET", raising=False)
    monkeypatch.delenv("SN_OBO_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger=module.__name__):
        ServiceNowSettings.model_validate({"instances": [instance()]})
    assert "SN_OBO_SECRET (from auth.client_secret_env) is not set" in caplog.text
    assert "SN_OBO_KEY (from auth.private_key_env) is not set" in caplog.text
