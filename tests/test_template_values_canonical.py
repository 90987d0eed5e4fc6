"""A typed template value has one spelling: a deny on one URI is not read past by another.

The gate judges the URI as the client sent it; a decorated template's function gets the value
converted to its parameter's type. pydantic's conversion is lax (``int`` takes ``01``, ``+1`` and
``1.0``; ``bool`` takes ``1``, ``yes`` and ``on``; ``UUID`` takes upper case, no dashes, braces), so
a deny of ``acct://users/1`` was read past as ``acct://users/01`` (tester twenty-one, HIGH). Now a
value whose canonical text (the parameter type's own JSON form) differs from what was sent is
refused -32602, naming the spelling to use; the canonical spelling is the one the rule meets.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime, time
from decimal import Decimal
from typing import Annotated

import pytest
from mcp.shared.exceptions import MCPError
from pydantic import AfterValidator

from mcp_providers.plugin import Plugin
from mcp_providers.plugins import policy
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

KEY = uuid.UUID("a2345678-1234-5678-9abc-def012345678")
plugin = Plugin("acct", prefixes=["acct://"])


@plugin.template("acct://users/{uid}")
def user(uid: int) -> str:
    """One user's record."""
    return f"record {uid}"


@plugin.template("acct://flags/{on}")
def flag(on: bool) -> str:
    """A view by flag."""
    return "admin view" if on else "public view"


@plugin.template("acct://keys/{k}")
def key(k: uuid.UUID) -> str:
    """A key by id."""
    return "key material" if k == KEY else "no key"


@plugin.template("acct://days/{day}")
def day(day: date) -> str:
    """One day's entries."""
    return f"entries of {day.isoformat()}"


@plugin.template("acct://titles/{title}")
def title(title: Annotated[str, AfterValidator(str.lower)]) -> str:
    """A title, folded by the function's own type."""
    return f"title {title}"


@plugin.template("acct://amounts/{amount}")
def amount(amount: Decimal) -> str:
    """An amount."""
    return f"amount {amount}"


@plugin.template("acct://instants/{at}")
def instant(at: datetime) -> str:
    """An instant."""
    return f"instant {at.isoformat()}"


@plugin.template("acct://times/{at}")
def clock(at: time) -> str:
    """A time of day."""
    return f"time {at.isoformat()}"


@plugin.template("acct://levels/{level}")
def level(level: float) -> str:
    """A level."""
    return f"level {level}"


DENIED = [
    "acct://users/1",
    "acct://flags/true",
    f"acct://keys/{KEY}",
    "acct://days/2026-01-02",
    "acct://titles/dune",
    "acct://amounts/1",
    "acct://instants/2026-01-01T00:00:00Z",
    "acct://times/00:00:00Z",
    "acct://levels/0.0",
]


def _composition() -> object:
    rules = [{"effect": "deny", "actions": ["read"], "targets": DENIED}]
    return compose({"acct": plugin, "policy": policy}, {"policy": {"rules": rules}})


OTHER_SPELLINGS = {
    "acct://users/01": "1",
    "acct://users/+1": "1",
    "acct://users/1.0": "1",
    "acct://users/0001": "1",
    "acct://flags/1": "true",
    "acct://flags/yes": "true",
    "acct://flags/on": "true",
    "acct://flags/TRUE": "true",
    f"acct://keys/{str(KEY).upper()}": str(KEY),
    f"acct://keys/{KEY.hex}": str(KEY),
    f"acct://keys/%7B{KEY}%7D": str(KEY),
    "acct://titles/DUNE": "dune",
    "acct://titles/Dune": "dune",
    # equal values, other texts (tester twenty-three F2)
    "acct://amounts/1.0": "1",
    "acct://amounts/1.00": "1",
    "acct://amounts/1E+0": "1",
    "acct://instants/2026-01-01T01:00:00+01:00": "2026-01-01T00:00:00Z",
    "acct://instants/2025-12-31T23:00:00-01:00": "2026-01-01T00:00:00Z",
    "acct://times/01:00:00+01:00": "00:00:00Z",
    "acct://levels/-0.0": "0.0",
}


@pytest.mark.parametrize("uri", sorted(OTHER_SPELLINGS))
async def test_another_spelling_of_a_denied_value_is_never_served(uri: str) -> None:
    async with connect(_composition()) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError):  # -32602, or the deny where the rule itself folds case
            await client.read_resource(uri)


@pytest.mark.parametrize("uri", sorted(OTHER_SPELLINGS))
async def test_another_spelling_is_refused_naming_the_canonical_one(uri: str) -> None:
    async with connect(compose({"acct": plugin})) as client:  # no rule: the spelling alone is refused
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    assert refused.value.error.code == -32602
    assert f"use {OTHER_SPELLINGS[uri]!r}" in refused.value.error.message


@pytest.mark.parametrize("uri", DENIED)
async def test_the_canonical_spelling_meets_the_deny(uri: str) -> None:
    async with connect(_composition()) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    assert refused.value.error.code != -32602  # the policy's refusal, not the spelling's


@pytest.mark.parametrize(
    ("uri", "text"),
    [
        ("acct://users/2", "record 2"),
        ("acct://users/-3", "record -3"),
        ("acct://flags/false", "public view"),
        ("acct://keys/00000000-0000-0000-0000-000000000001", "no key"),
        ("acct://days/2026-01-03", "entries of 2026-01-03"),
        ("acct://titles/foundation", "title foundation"),
        ("acct://amounts/2.5", "amount 2.5"),
        ("acct://amounts/100", "amount 100"),
        ("acct://amounts/-3", "amount -3"),
        ("acct://instants/2026-01-01T01:00:00Z", "instant 2026-01-01T01:00:00+00:00"),
        ("acct://times/08:30:00", "time 08:30:00"),
        ("acct://levels/-1.5", "level -1.5"),
    ],
)
async def test_canonical_values_that_are_not_denied_are_served(uri: str, text: str) -> None:
    async with connect(_composition()) as client:  # type: ignore[arg-type]
        result = await client.read_resource(uri)
    assert result.contents[0].text == text  # type: ignore[union-attr]
