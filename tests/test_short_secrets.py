"""One rule for a held secret too short to mask (tester r12, finding 2).

A client secret ``j`` was "masked" out of every upstream message (``j[redacted]onrpc``...): a
value that short cannot be cut out of a text without garbling it, and hides nothing. Every source
of a held secret now follows :data:`~mcp_providers.plugins._masking.MIN_SECRET_CHARS`:

- configured (the value of a variable a setting names as a secret: a token, a client secret, a
  password, an API key): refused when the settings are validated, the error naming the setting
  and the minimum, never the value;
- an upstream's stdio ``env`` value (not necessarily a secret: a flag, a port): not masked;
- obtained (a credential the broker handed, a token ServiceNow issued, a token sent to a token
  endpoint): not masked.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_providers.plugins._masking import MASK, MIN_SECRET_CHARS, Secrets
from mcp_providers.plugins.openapi.settings import OpenAPISettings
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.settings import ServiceNowSettings
from mcp_providers.plugins.upstream.connect import held_secrets
from mcp_providers.plugins.upstream.settings import ServerSettings as UpstreamServer

SHORT, LONG = "j" * (MIN_SECRET_CHARS - 1), "k" * MIN_SECRET_CHARS
TEXT = "jjjjjsonrpc kkkkkk error"
REFUSED = rf"is shorter than {MIN_SECRET_CHARS} characters"


def upstream(**auth: Any) -> dict[str, Any]:
    return {"name": "who", "url": "http://127.0.0.1:9/mcp", "prefixes": ["whoami://"], "auth": auth}


def openapi(**auth: Any) -> dict[str, Any]:
    return {"services": [{"name": "pets", "document": "http://127.0.0.1:9/openapi.json", "auth": auth}]}


def servicenow(**auth: Any) -> dict[str, Any]:
    return {"instances": [{"name": "prod", "url": "https://prod.service-now.com", "auth": auth}]}


OAUTH = {"token_endpoint": "http://127.0.0.1:9/token", "client_id_env": "K2_ID", "client_secret_env": "K2_SECRET"}
CONFIGURED = [
    (UpstreamServer.model_validate, upstream(type="bearer", token_env="K2_SECRET"), "auth.token_env"),
    (UpstreamServer.model_validate, upstream(type="client_credentials", **OAUTH), "auth.client_secret_env"),
    (OpenAPISettings.model_validate, openapi(type="bearer", token_env="K2_SECRET"), "auth.token_env"),
    (OpenAPISettings.model_validate, openapi(type="basic", username="u", password_env="K2_SECRET"),
     "auth.password_env"),
    (OpenAPISettings.model_validate, openapi(type="api_key", name="X-Key", value_env="K2_SECRET"), "auth.value_env"),
    (OpenAPISettings.model_validate, openapi(type="client_credentials", **OAUTH), "auth.client_secret_env"),
    (ServiceNowSettings.model_validate, servicenow(type="basic", username="u", password_env="K2_SECRET"),
     "auth.password_env"),
    (ServiceNowSettings.model_validate, servicenow(type="api_key", api_key_env="K2_SECRET"), "auth.api_key_env"),
    (ServiceNowSettings.model_validate, servicenow(type="oauth", client_id="mcp", client_secret_env="K2_SECRET"),
     "auth.client_secret_env"),
]  # fmt: skip
IDS = ["upstream bearer", "upstream oauth", "openapi bearer", "openapi basic", "openapi api key", "openapi oauth",
       "servicenow basic", "servicenow api key", "servicenow oauth"]  # fmt: skip


@pytest.mark.parametrize(("validate", "table", "setting"), CONFIGURED, ids=IDS)
def test_a_configured_secret_shorter_than_the_minimum_is_refused_naming_the_setting_and_the_minimum(
    validate: Any, table: dict[str, Any], setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K2_ID", "id")  # a client id is no secret: any length
    monkeypatch.setenv("K2_SECRET", SHORT)
    with pytest.raises(ValidationError, match=REFUSED) as refused:
        validate(table)
    message = str(refused.value)
    assert setting in message and "K2_SECRET" in message
    assert f"{MIN_SECRET_CHARS} characters or more" in message
    assert repr(SHORT) not in message and f"={SHORT}" not in message


@pytest.mark.parametrize(("validate", "table", "setting"), CONFIGURED, ids=IDS)
def test_a_configured_secret_of_the_minimum_length_or_unset_is_accepted(
    validate: Any, table: dict[str, Any], setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K2_ID", "id")
    monkeypatch.setenv("K2_SECRET", LONG)
    validate(table)
    monkeypatch.delenv("K2_SECRET")
    validate(table)  # unset: a warning (the service loads; its requests fail saying so), as before


def test_a_short_stdio_env_value_is_not_masked_a_long_one_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K2_FLAG", SHORT)
    monkeypatch.setenv("K2_TOKEN", LONG)
    server = UpstreamServer.model_validate({"name": "talk", "command": "talk", "prefixes": ["talk://"],
                                            "env": {"FLAG": "K2_FLAG", "TOKEN": "K2_TOKEN"}})  # fmt: skip
    assert held_secrets(server).masked(TEXT) == f"jjjjjsonrpc {MASK} error"


@pytest.mark.parametrize("handed", [True, False], ids=["handed by the broker", "sent to a token endpoint"])
def test_an_obtained_secret_shorter_than_the_minimum_is_not_masked(handed: bool) -> None:
    secrets = Secrets("upstream 'who'")
    secrets.add(SHORT, handed=handed)
    secrets.add(LONG, handed=handed)
    assert secrets.masked(TEXT) == f"jjjjjsonrpc {MASK} error"
    encoded = f"{SHORT.encode().hex()} {base64.b64encode(SHORT.encode()).decode()}"  # long enough spellings of it
    assert secrets.masked(encoded) == encoded
    assert Secrets.of("the token endpoint of 'who'", [SHORT, None, LONG]).masked(TEXT) == f"jjjjjsonrpc {MASK} error"


def test_a_token_servicenow_issued_shorter_than_the_minimum_is_not_masked() -> None:
    redactor = Redactor()
    redactor.add_issued(SHORT)
    redactor.add_issued(LONG)
    redactor.add(SHORT[:4])
    assert redactor.text(TEXT) == f"jjjjjsonrpc {MASK} error"


DECODED_SHORT = ["%65%20", "%20%74%68", "%C3%A9%65", "%41%42%43", "a%2Fb%2F"]
"""Secrets of the minimum length whose URL-decoded spelling is shorter (``e ``, `` th``, ``ée``, ``ABC``,
``a/b/``): the tester's, and more of the kind."""
WORDS = "the record was updated here; see the reference field ABC a/b/ ée"


@pytest.mark.parametrize("value", DECODED_SHORT)
def test_a_spelling_shorter_than_the_minimum_is_not_searched_for_the_value_still_is(value: str) -> None:
    for secrets in (Secrets.of("who", [value]), Secrets.of("who", ["long-enough-secret", value])):
        assert secrets.masked(WORDS) == WORDS
        assert secrets.masked(f"sent {value} back") == f"sent {MASK} back"
    redactor = Redactor()
    redactor.add_basic("admin", value)
    assert redactor.text(WORDS) == WORDS and redactor.text(f"sent {value}") == f"sent {MASK}"


def test_a_decoded_spelling_long_enough_is_searched_for() -> None:
    secrets = Secrets.of("who", ["abc%20defgh12"])
    assert secrets.masked("sent abc defgh12 and abc%20defgh12") == f"sent {MASK} and {MASK}"


def test_a_handed_secret_in_use_again_is_the_last_one_dropped() -> None:
    secrets = Secrets("upstream 'who'")
    first = "token-of-the-first-caller"
    secrets.add(first, handed=True)
    for n in range(Secrets.HANDED_KEPT - 1):
        secrets.add(f"token-number-{n:06d}", handed=True)
    secrets.add(first, handed=True)  # the first caller's next request: in use again
    secrets.add("token-one-more-0000", handed=True)  # the oldest now is token-number-000000
    assert secrets.masked(f"echo {first}") == f"echo {MASK}"
    assert secrets.masked("echo token-number-000000") == "echo token-number-000000"
