"""A non-ASCII secret shown through ANY single-byte charset is masked (tester, round 12, M4).

Round 11 covered a secret's UTF-8 bytes read as Latin-1 or cp1252 only: read in cp1251, KOI8-R,
cp866, ISO-8859-2/-5, cp1250, cp437 or mac_roman, ``пароль-секрет-42`` reached the client as
``РїР°СЂРѕР»СЊ-...`` (an upstream's tool result, an OpenAPI error body), and the secret's own
cp1251/KOI8-R bytes hex-encoded were not found. The kind: a text whose characters are a single-byte
charset's reading of a secret's bytes. A view reads every text back through each single-byte charset
Python has (``plugins/_single_byte.py``); what it cannot undo (re-cased, an undefined byte read as
U+FFFD) and the secret's own bytes in each charset are spellings (``plugins/_masking.py``).
"""

from __future__ import annotations

import base64
import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from prefork import upstream_script

from mcp_providers.plugins import _single_byte, upstream
from mcp_providers.plugins._masking import MASK, Secrets
from mcp_providers.testing import compose, connect

NAMED = ["cp1251", "koi8-r", "cp866", "iso-8859-2", "iso-8859-5", "cp1250", "cp437", "mac_roman"]
"""The charsets the tester named, then more of the kind none of them named."""
MORE = ["latin-1", "cp1252", "iso-8859-15", "cp850", "koi8-u", "mac_cyrillic", "cp1253", "iso-8859-7",
        "cp1257", "cp852", "cp855", "cp1254", "iso-8859-13", "mac_greek", "kz1048"]  # fmt: skip
HELD = ["пароль-секрет-42", "pässwörd-1", "geheim€Šx", "κωδικός-μυστικό-9", "hasło-zażółć-77"]


def _shown(value: str, charset: str) -> Iterator[tuple[str, str]]:
    """``(how, text)``: ``value``'s bytes as a service working in ``charset`` shows them."""
    raw = value.encode()
    java = raw.decode(charset, "replace")  # an undefined byte as U+FFFD
    yield "UTF-8 read, undefined as U+FFFD", java
    yield "UTF-8 read, upper-cased", java.upper()
    yield "UTF-8 read, lower-cased", java.lower()
    yield "UTF-8 read, JSON-escaped", json.dumps(java)
    try:
        yield "UTF-8 read", raw.decode(charset)
    except UnicodeDecodeError:  # browsers and Windows: an undefined byte as its C1 control
        yield "UTF-8 read, undefined as its Latin-1 character", raw.decode(charset, "mcp_providers.masking.latin-1")
    try:
        own = value.encode(charset)
    except UnicodeEncodeError:
        return
    yield "own bytes, hex", own.hex()
    yield "own bytes, HEX", own.hex().upper()
    yield "own bytes, base64", base64.b64encode(own).decode()
    yield "own bytes, URL-encoded", quote(own, safe="")
    yield "own bytes, Python bytes repr", repr(own)


@pytest.mark.parametrize("value", HELD)
def test_a_non_ascii_secret_through_any_single_byte_charset_is_masked(value: str) -> None:
    """Every charset and every way of showing, for one secret held once (a case each would build
    the secret's spellings some 150 times); every miss is listed."""
    secrets = Secrets()
    secrets.add(value)
    missed, tried = [], 0
    for charset in NAMED + MORE:
        for how, shown in _shown(value, charset):
            if shown == value:
                continue
            tried += 1
            text = f"login failed for {shown} (end)"
            masked = secrets.masked(text)
            if not secrets.found_in(text) or shown in masked or value in masked or MASK not in masked:
                missed.append(f"{charset}, {how}: {masked}")
    assert tried > 100 and missed == []


@pytest.mark.parametrize(
    "text",
    [
        "пароль неверный: секрет не тот, 42 попытки",  # the words, not the secret
        "привет".encode().decode("cp1251") + " мир",  # another word's mojibake, next to Cyrillic
        "pässwörd-2 and pässwörd-1x".encode().decode("cp437")[:-12],  # another secret's mojibake
        "Ð¿Ð°Ñ€Ð¾Ð»ÑŒ",  # its start only, in Latin-1
    ],
)
def test_a_text_whose_charset_readings_hold_no_secret_is_left_as_it_came(text: str) -> None:
    secrets = Secrets.of("t", ["пароль-секрет-42", "pässwörd-1"])
    assert not secrets.found_in(text), text
    assert secrets.masked(text) == text


def test_every_family_of_single_byte_charset_is_read_back_and_ebcdic_and_multibyte_are_not() -> None:
    names = {codecs.lookup(c.name).name for c in _single_byte.charsets()}
    for wanted in [*NAMED, *MORE, "iso-8859-16", "cp1258", "mac_roman", "koi8-t", "cp874"]:
        table = bytes(range(256)).decode(wanted, "replace")
        assert codecs.lookup(wanted).name in names or any(
            _single_byte.read_as(bytes(range(256)), c).replace("\ufffd", "") == table.replace("\ufffd", "")
            for c in _single_byte.charsets()
        ), wanted  # or one with the same table (iso8859-1 for latin-1)
    assert not names & {"cp037", "cp500", "cp932", "utf-8", "cp1140"}


def test_only_the_charsets_reading_a_held_secrets_bytes_as_the_text_does_are_tried() -> None:
    signs = _single_byte.Signs(["пароль-секрет-42"])
    assert list(signs.undone("plain ascii text")) == []
    assert list(signs.undone("пароль неверный, секрет не тот")) == []  # no pair any charset reads its letters as
    views = list(signs.undone("Ð¿Ð°"))  # Latin-1's reading of two of its letters
    assert "па" in views and len(views) < len(_single_byte.charsets()) // 4
    assert not _single_byte.Signs(["ascii-secret-42"])


def test_with_only_ascii_secrets_held_no_text_is_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views cost only while a non-ASCII secret is held."""

    def refused(self: object, text: str) -> Iterator[str]:
        raise AssertionError("read back with no non-ASCII secret held")

    monkeypatch.setattr(_single_byte.Signs, "undone", refused)
    secrets = Secrets.of("t", ["ascii-secret-42"])
    assert secrets.masked("пароль Ð¿ РїР°") == "пароль Ð¿ РїР°"
    secrets.add("пароль-секрет-42")
    with pytest.raises(AssertionError, match="read back"):
        secrets.found_in("пароль Ð¿ РїР°")


UPSTREAM = """
import os
from mcp.server.mcpserver import MCPServer
TOKEN = os.environ["UP_TOKEN"]
server = MCPServer("echoes", log_level="WARNING")

@server.tool()
def echo(charset: str) -> str:
    return "token was " + TOKEN.encode().decode(charset, "replace")

server.run("stdio")
"""
SECRET = "пароль-секрет-42"


@pytest.mark.anyio
async def test_an_upstream_showing_its_secret_through_any_single_byte_charset_says_only_the_mask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "charset_upstream.py"
    script.write_text(UPSTREAM)
    monkeypatch.setenv("CHARSET_TOKEN", SECRET)
    started = upstream_script(str(script))  # through the fork server: the SDK is imported already
    server = {"name": "talk", **started, "namespace": "talk",
              "env": {**started["env"], "UP_TOKEN": "CHARSET_TOKEN"}}  # fmt: skip
    composition = compose({"upstream": upstream}, {"upstream": {"servers": [server]}})
    async with composition.running(), connect(composition) as client:  # type: ignore[attr-defined]
        for charset in [*NAMED, *MORE, "utf-8"]:
            result = await client.call_tool("echo", {"charset": charset})
            text = " ".join(getattr(block, "text", "") for block in result.content)
            shown = SECRET.encode().decode(charset, "replace")
            assert shown not in text and MASK in text, (charset, text)
