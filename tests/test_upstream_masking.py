"""What an upstream says never carries a secret this server holds for it (tester, round 8).

An upstream quoted its credential back: a read's error ``... token Bearer upstream-secret-...``
and a tool's ``isError`` text reached the client verbatim. Every text from an upstream (errors,
tool results, task status) now has the values of the variables its settings name (``env``,
``auth.token_env``, a client secret) and the credentials handed for it masked, and any
``Bearer``/``Basic`` token too (``plugins/_masking.py``).
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from mcp import MCPError
from prefork import upstream_script

from mcp_providers.plugins import upstream
from mcp_providers.plugins._masking import MASK, Secrets
from mcp_providers.testing import compose, connect

pytestmark = pytest.mark.anyio

SECRET = "upstream-secret-7f3a9c1e5b"
OTHER_BEARER = "eyJhbGciOiJub25lIn0.c29tZW9uZQ"

UPSTREAM = f"""
import os
from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
import sys
TOKEN = os.environ["UP_TOKEN"]
print("talkative starting with " + TOKEN, file=sys.stderr, flush=True)
server = MCPServer("talkative " + TOKEN, version=TOKEN, log_level="WARNING")

@server.resource("talk://echo", mime_type="text/plain", description="says " + TOKEN)
def echo() -> str:
    return "the token is " + TOKEN

@server.prompt(description="prompt " + TOKEN)
def greet() -> str:
    return "hello " + TOKEN

@server.resource("talk://fails", mime_type="text/plain")
def fails() -> str:
    raise MCPError(-32000, f"backend refused token {{TOKEN}} (Bearer {OTHER_BEARER})")

@server.tool()
def echo_env(fail: bool = False) -> CallToolResult:
    said = f"upstream rejected credential Bearer {{TOKEN}}" if fail else f"my token is {{TOKEN}}; basic {OTHER_BEARER}"
    return CallToolResult(content=[TextContent(type="text", text=said)], is_error=fail)

@server.tool()
def echo_spelled(how: str) -> str:
    import base64, html
    spelled = {{"capitalised": TOKEN.capitalize(),
               "entities": "".join(f"&#x{{ord(c):X}};" for c in TOKEN),
               "hex": ":".join(f"{{b:02x}}" for b in TOKEN.encode()),
               "fullwidth": "".join(chr(ord(c) + 0xFEE0) for c in TOKEN),
               "mime": base64.encodebytes(b"x" * 50 + TOKEN.encode()).decode()}}
    return "upstream says " + spelled[how]

server.run("stdio")
"""


@pytest.fixture
def composition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    script = tmp_path / "talkative_upstream.py"
    script.write_text(UPSTREAM)
    monkeypatch.setenv("TALKATIVE_TOKEN", SECRET)
    started = upstream_script(str(script))  # through the fork server: the SDK is imported already
    server = {"name": "talk", **started, "prefixes": ["talk://"],
              "env": {**started["env"], "UP_TOKEN": "TALKATIVE_TOKEN"}}  # fmt: skip
    return compose({"upstream": upstream}, {"upstream": {"servers": [server]}})


async def test_errors_and_tool_texts_from_an_upstream_carry_no_held_secret(composition: object) -> None:
    async with composition.running(), connect(composition) as client:  # type: ignore[attr-defined]
        with pytest.raises(MCPError) as failed:
            await client.read_resource("talk://fails")
        said = failed.value.error.message
        assert "backend refused token" in said and SECRET not in said and OTHER_BEARER not in said, said
        assert MASK in said
        error = await client.call_tool("echo_env", {"fail": True})
        ok = await client.call_tool("echo_env", {"fail": False})
    for result in (error, ok):
        text = " ".join(getattr(block, "text", "") for block in result.content)
        assert SECRET not in text and OTHER_BEARER not in text and MASK in text, text
    assert error.is_error and not ok.is_error


def test_a_held_secret_is_masked_whole_and_short_values_are_left() -> None:
    secrets = Secrets()
    secrets.add("abc")  # shorter than MIN_SECRET_CHARS: masking it would garble text and hide nothing
    secrets.add("token-123456")
    secrets.add("token-123456-extended")  # one secret holding another: the longer masked whole
    assert secrets.masked("abc token-123456-extended token-123456") == f"abc {MASK} {MASK}"
    assert secrets.masked("Authorization: Bearer zz9zzzzz") == f"Authorization: Bearer {MASK}"
    assert secrets.masked("a basic approach") == "a basic approach"  # a word, not a token
    assert secrets.masked("header: BASIC dXNlcjpwYXNzd29yZA==") == f"header: BASIC {MASK}"
    secrets.add("hu+tok/9f8e7d")
    assert secrets.masked("sent hu%2Btok%2F9f8e7d back") == f"sent {MASK} back"  # URL-encoded
    for spelled in ("hu%2Btok/9f8e7d", "hu%2btok%2f9f8e7d", "hu%2Btok%2F9f8e7d"):  # / kept, lower-case hex (third pass)
        assert secrets.masked(f"sent {spelled} back") == f"sent {MASK} back", spelled
    secrets.add('q"uo\\te-1234')
    assert secrets.found_in(json.dumps({"said": 'x q"uo\\te-1234 y'}))  # JSON-escaped: found, masked once parsed
    assert secrets.masked_data({"said": ['x q"uo\\te-1234 y']}) == {"said": [f"x {MASK} y"]}


def test_handed_credentials_are_kept_up_to_a_bound_and_configured_ones_always() -> None:
    secrets = Secrets()
    secrets.add("configured-secret")
    for n in range(Secrets.HANDED_KEPT + 10):
        secrets.add(f"handed-token-{n:04d}", handed=True)
    assert secrets.masked("configured-secret") == MASK
    assert secrets.masked("handed-token-0000") == "handed-token-0000"  # the oldest, dropped
    assert secrets.masked(f"handed-token-{Secrets.HANDED_KEPT + 9:04d}") == MASK


async def test_nothing_an_upstream_lists_serves_or_says_of_itself_carries_a_held_secret(composition: object) -> None:
    """Tester, round 8 (second pass): listings, content, prompt messages and the upstream's own
    serverInfo (in every receipt and audit line) carried the secret; every message the upstream
    sends now has it masked (``Sieve.masked``)."""
    async with composition.running(), connect(composition) as client:  # type: ignore[attr-defined]
        said = [
            (await client.list_resources()).model_dump_json(),
            (await client.list_prompts()).model_dump_json(),
            (await client.read_resource("talk://echo")).model_dump_json(),
            (await client.get_prompt("greet")).model_dump_json(),
        ]
    for text in said:
        assert SECRET not in text and MASK in text, text
    assert "serverInfo" in said[2] and "talkative [redacted]" in said[2], said[2]  # the receipt names it masked


async def test_the_upstreams_stderr_reaches_ours_masked(
    composition: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tester, round 8 (second pass): a stdio upstream's stderr passed through unmasked."""
    async with composition.running(), connect(composition) as client:  # type: ignore[attr-defined]
        await client.read_resource("talk://echo")
    err = capsys.readouterr().err
    assert "talkative starting with [redacted]" in err and SECRET not in err, err


ENCODED_SECRET = "tok_9Zq-Lm3+xV/Wp7~Rt5Ky"


@pytest.mark.parametrize("shift", [0, 1, 2])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_a_secret_base64_encoded_inside_a_longer_blob_is_masked(shift: int, encode: Any) -> None:
    """Tester, round 8 (left then): a secret base64-encoded was not masked. Inside a longer blob
    its encoding depends on where it starts (three alignments); each is found."""
    secrets = Secrets()
    secrets.add(ENCODED_SECRET)
    blob = encode(b"x" * shift + b"Authorization header was " + ENCODED_SECRET.encode() + b" and more text").decode()
    masked = secrets.masked(blob)
    assert MASK in masked, (shift, blob)
    for cut in range(len(ENCODED_SECRET) - 3):  # no 4 bytes of the secret decode from what is left
        piece = ENCODED_SECRET[cut : cut + 4].encode()
        for part in masked.split(MASK):
            padded = part + "=" * (-len(part) % 4)
            for start in range(4):
                chunk = padded[start:]
                chunk = chunk[: len(chunk) - len(chunk) % 4]
                try:
                    decoded = base64.b64decode(chunk, altchars=b"-_" if encode is base64.urlsafe_b64encode else None)
                except ValueError:
                    continue
                assert piece not in decoded, (shift, cut, part)


def test_a_secret_alone_base64_or_hex_encoded_or_recased_is_masked_whole() -> None:
    secrets = Secrets()
    secrets.add(ENCODED_SECRET)
    raw = ENCODED_SECRET.encode()
    spelled = [
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
        raw.hex(),
        raw.hex().upper(),
        ENCODED_SECRET.upper(),
        ENCODED_SECRET.lower(),
    ]
    for text in spelled:
        assert secrets.masked(f"said <{text}> back") == f"said <{MASK}> back", text
        assert secrets.found_in(json.dumps({"said": text})), text


def test_masking_keeps_the_text_around_a_secret_of_any_script() -> None:
    secrets = Secrets()
    secrets.add("clé-secrète-😀-9876")
    assert secrets.masked("avant clé-secrète-😀-9876 après ☃") == f"avant {MASK} après ☃"
    assert secrets.masked("nothing here ☃") == "nothing here ☃"


def test_each_of_many_handed_credentials_is_masked() -> None:
    """With 256 credentials handed (one per caller of an on-behalf-of upstream) every message is
    searched for each of them (``benchmarks/masking.py`` times it: one automaton's pass)."""
    secrets = Secrets()
    for n in range(Secrets.HANDED_KEPT):
        secrets.add(f"handed-{n:04d}-{'k' * 30}", handed=True)
    for n in (0, 7, Secrets.HANDED_KEPT - 1):
        text = "lorem ipsum " * 170 + f"handed-{n:04d}-{'k' * 30}"
        assert secrets.masked(text).endswith(f"ipsum {MASK}")
        assert secrets.found_in(text)
    assert not secrets.found_in("lorem ipsum " * 170)


VIEWED = "Pa55!word/2026+xyz-0123~Qz(42)*"
"""A password with characters every encoder spells its own way (tester, round 10)."""


def _js_component(value: str) -> str:  # JavaScript encodeURIComponent: ! ~ * ( ) ' kept
    return "".join(c if c.isalnum() or c in "-_.!~*'()" else "".join(f"%{b:02X}" for b in c.encode()) for c in value)


def _java_url(value: str) -> str:  # java.net.URLEncoder: ~ encoded, * kept
    return "".join(c if c.isalnum() or c in ".-*_" else "".join(f"%{b:02X}" for b in c.encode()) for c in value)


def _mime(value: str, shift: int) -> str:  # MIME base64: 76-character lines
    return base64.encodebytes(b"y" * (40 + shift) + b"password=" + value.encode() + b"; " + b"z" * 70).decode()


SPELLED_IN_VIEWS: dict[str, Any] = {
    "PHP json_encode (\\/)": lambda v: json.dumps(v)[1:-1].replace("/", "\\/"),
    ".NET System.Text.Json (\\u002B)": lambda v: json.dumps(v)[1:-1].replace("+", "\\u002B").replace("'", "\\u0027"),
    "every character \\u-escaped": lambda v: "".join(f"\\u{ord(c):04x}" for c in v),
    "JavaScript encodeURIComponent in a URL": lambda v: f"https://app.example/cb?pw={_js_component(v)}&next=%2F",
    "Java URLEncoder (~ as %7E)": _java_url,
    "URL-encoded twice": lambda v: quote(quote(v, safe=""), safe=""),
    "URL-encoded three times": lambda v: quote(quote(quote(v, safe=""), safe=""), safe=""),
    "HTML hex entities": lambda v: "".join(c if c.isalnum() else f"&#x{ord(c):X};" for c in v),
    "HTML decimal and named entities": lambda v: html.escape(v).replace("!", "&excl;").replace("/", "&#47;"),
    "hex with ':' separators": lambda v: ":".join(f"{b:02x}" for b in v.encode()),
    "hex with spaces, upper-case": lambda v: " ".join(f"{b:02X}" for b in v.encode()),
    "first letter re-cased": lambda v: v[0].lower() + v[1:],
    "case swapped": str.swapcase,
    "fullwidth": lambda v: "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in v),
    "MIME base64, shift 0": lambda v: _mime(v, 0),
    "MIME base64, shift 1": lambda v: _mime(v, 1),
    "MIME base64, shift 2": lambda v: _mime(v, 2),
    "MIME base64 in a JSON string": lambda v: json.dumps(_mime(v, 1)),
    "URL-encoded PHP JSON": lambda v: quote(json.dumps({"pw": v}).replace("/", "\\/"), safe=""),
    "quoted-printable": lambda v: v.replace("=", "=3D").replace("!", "=21"),
}


@pytest.mark.parametrize("how", sorted(SPELLED_IN_VIEWS))
def test_a_secret_spelled_in_a_way_no_spelling_names_is_found_in_a_view_and_the_text_masked_whole(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Tester, round 10 (H4): a secret was found only in the spellings masking enumerates; a PHP,
    .NET or JavaScript service, a MIME mailer, an HTML page spelled it otherwise. The text's
    decoded views are searched too, and a text whose view holds a secret is masked whole."""
    secrets = Secrets("upstream 'php'")
    secrets.add(VIEWED)
    text = f"upstream said: {SPELLED_IN_VIEWS[how](VIEWED)} (end)"
    assert secrets.found_in(text), how
    assert secrets.found_in(json.dumps({"said": text})), how  # what the sieve searches: the dumped message
    with caplog.at_level("WARNING", logger="mcp_providers.plugins._masking"):
        assert secrets.masked(text) == MASK, how
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned and all("upstream 'php'" in w and VIEWED not in w for w in warned), warned
    assert secrets.masked_data({"said": [text]}) == {"said": [MASK]}


def test_a_text_whose_views_hold_no_secret_is_left_as_it_came() -> None:
    """Views only decide: nothing of a text without a secret changes, however encoded it is."""
    secrets = Secrets()
    secrets.add(VIEWED)
    for text in ("100% sure &amp; \\u0041 \\/ %2F =3D \uff26\uff55ll 4b:78:39 Pa55!word x=AB",
                 "Pa55 !word/2026+xyz-0123~Qz(4",  # a secret's start, not the secret
                 "eHl6 eXo=\nYWJj", "MASK me: " + MASK):  # fmt: skip
        assert not secrets.found_in(text), text
        assert secrets.masked(text) == text, text
    short = Secrets()
    short.add("abc123")  # words the compacted view joins do not spell a short secret
    assert short.masked("ab c123 and abc:123") == "ab c123 and abc:123"


def test_a_secret_found_as_written_and_in_a_view_of_the_rest_masks_the_whole_text() -> None:
    secrets = Secrets()
    secrets.add(VIEWED)
    assert secrets.masked(f"a {VIEWED} b") == f"a {MASK} b"  # as written: cut out, the rest kept
    assert secrets.masked(f"a {VIEWED} b {_js_component(VIEWED)}") == MASK


def test_a_secret_utf16_encoded_then_base64_or_hex_encoded_is_masked() -> None:
    """Tester, round 10: what a Windows or Java service encodes is UTF-16 first."""
    secrets = Secrets()
    secrets.add(VIEWED)
    for wide in (VIEWED.encode("utf-16-le"), VIEWED.encode("utf-16-be")):
        for text in (base64.b64encode(wide).decode(), wide.hex(), wide.hex().upper()):
            assert secrets.found_in(f"said {text} back"), text
            assert secrets.masked(f"said {text} back") == f"said {MASK} back", text


async def test_an_upstream_spelling_its_secret_its_own_way_says_only_the_mask(
    composition: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Tester, round 10 (H4), end to end: the sieve's ``found_in`` on the dumped message searches the
    views too, and the text whose view holds the secret reaches the client as the mask alone."""
    async with composition.running(), connect(composition) as client:  # type: ignore[attr-defined]
        for how in ("capitalised", "entities", "hex", "fullwidth", "mime"):
            result = await client.call_tool("echo_spelled", {"how": how})
            said = result.model_dump_json()
            assert "upstream says" not in said and MASK in said, (how, said)  # the text masked whole
            assert result.structured_content == {"result": MASK}, how
    warned = [r.getMessage() for r in caplog.records if r.name == "mcp_providers.plugins._masking"]
    assert warned and all(w.startswith("upstream 'talk' sent a text holding a secret") for w in warned), warned


GH_TOKEN = "ghp_Ab12Cd34Ef56Gh78Ij90"


@pytest.mark.parametrize(
    "said",
    [
        "| GITHUB\\_TOKEN | ghp\\_Ab12Cd34Ef56Gh78Ij90 |",  # CommonMark / MarkdownV2 escaping (sixth pass)
        "ghp\\_Ab12Cd34Ef56Gh78Ij90\\.",
        "-".join(f"{b:02X}" for b in GH_TOKEN.encode()),  # .NET BitConverter.ToString
        "[" + ", ".join(str(b) for b in GH_TOKEN.encode()) + "]",  # Java Arrays.toString(bytes)
        "{" + ", ".join(f"0x{b:02x}" for b in GH_TOKEN.encode()) + "}",  # a C array
        "ghp_Ab12Cd<wbr>34Ef56Gh78Ij90",  # markup splitting it
        "ghp_Ab12\u00adCd34\u00adEf56\u00adGh78\u00adIj90",  # soft hyphens
        "ghp_Ab12\u200bCd34Ef56Gh78Ij90",  # a zero-width space
        "ghp_<b>Ab12Cd34</b>Ef56Gh78Ij90",
    ],
)
def test_a_secret_escaped_or_split_by_markup_separators_or_bytes_is_masked(said: str) -> None:
    secrets = Secrets()
    secrets.add(GH_TOKEN)
    assert secrets.found_in(said), said
    assert GH_TOKEN not in secrets.masked(said) and secrets.masked(said) == MASK, said


def test_a_secret_sent_back_as_a_json_number_is_masked() -> None:
    """Sixth pass: a held PIN came back as ``{"pin": 4815162342}``: found, but numbers were passed
    through unmasked."""
    secrets = Secrets()
    secrets.add("4815162342")
    data = {"error": "bad pin", "pin": 4815162342, "ratio": 0.5, "ok": True, "nothing": None}
    assert secrets.masked_data(data) == {"error": "bad pin", "pin": MASK, "ratio": 0.5, "ok": True, "nothing": None}


@pytest.mark.parametrize(
    "secret",
    ["hu-static-123456abcdefgh", "ab12:cd34:ef56:gh78:ij90", "tok(en)-{a;b},c[d]-Zq9TfW2x", "a b-c:d,e;f(g)h[i]j{k}l"],
)
@pytest.mark.parametrize("cut", [3, 9, 12, 17])
def test_a_secret_holding_separators_wrapped_over_two_lines_is_masked(secret: str, cut: int) -> None:
    """Tester 32 (F7): the compacted view strips separators from the text, so a secret holding any
    of them (``-``, ``:``, a space, a bracket...) wrapped over two lines was missed as spelled."""
    masked = Secrets.of("upstream", [secret]).masked
    for said in (f"auth failed for token {secret[:cut]}\n{secret[cut:]}\n", f"{secret[:cut]}\r\n  {secret[cut:]}"):
        assert masked(said) == MASK, (said, masked(said))


@pytest.mark.parametrize("prefix", ["ERR  ", "[talk] ", "2026-12-07 upstream: ", "| "])
@pytest.mark.parametrize("secret", ["Zq9TfW2xLp8RvN4kYh6GmB3cJd7sQa1E", "hu-static-123456abcdefgh"])
def test_a_secret_wrapped_with_a_prefix_on_each_line_is_masked(prefix: str, secret: str) -> None:
    """Tester 32 (F7): a log writing each line under the same prefix splits a wrapped secret by it;
    the text is read again with the leading prefix lines share removed."""
    masked = Secrets.of("upstream", [secret]).masked
    said = f"{prefix}token {secret[:11]}\n{prefix}{secret[11:]}\n{prefix}retrying"
    assert masked(said) == MASK, said
    assert masked(f"{prefix}one\n{prefix}two") == f"{prefix}one\n{prefix}two"  # no secret: left as it came
