"""A non-ASCII secret shown as its bytes in another charset is masked (tester, round 11, item 4).

A held ``Pa$$ w0rd&<x>/é`` came back unmasked when a service showed its UTF-8 bytes another way: read
as Latin-1 or cp1252 (a Java service decoding ``Basic``: ``.../Ã©``), as a Python bytes repr
(``b'...\\xc3\\xa9'``, httpcore2's DEBUG header line), quoted-printable (``=C3=A9``), or the secret's
Latin-1/cp1252 bytes base64-, hex- or URL-encoded instead of its UTF-8 bytes. The kind: a secret's
text may reach us as its bytes in one charset read in a single-byte one, or as a single-byte
encoding of it (``plugins/_masking.py``, ``_charset_spellings``).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import quopri
import re
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest

from mcp_providers.plugins._library_logs import library_logs_masked
from mcp_providers.plugins._masking import MASK, Secrets, _charset_spellings

HELD = {
    "latin-1 text": "Pa$$ w0rd&<x>/é",  # the tester's: Latin-1 and cp1252 encode it alike
    "cp1252 only (€)": "Kennwort-€uro-Ü42",  # € is 0x80 in cp1252, not in Latin-1
    "a byte cp1252 leaves undefined": "Clave-Ártica-€9",  # Á is C3 81 in UTF-8: 0x81 has no cp1252 character
    "neither charset": "hasło-zażółć-77",  # ł, ż, ó...: UTF-8 read as Latin-1 only
}


def _cp1252_web(raw: bytes) -> str:
    """``raw`` read as browsers (WHATWG) and Windows read cp1252: an undefined byte is its C1 control."""
    return "".join(bytes([b]).decode("cp1252", "ignore") or chr(b) for b in raw)


def _single_byte(value: str) -> dict[bytes, str]:
    """``value`` encoded in Latin-1 and cp1252 where it can be (one entry when both give the same bytes)."""
    forms: dict[bytes, str] = {}
    for codec in ("cp1252", "latin-1"):
        with contextlib.suppress(UnicodeEncodeError):
            forms[value.encode(codec)] = codec
    return forms


def _url(form: bytes, upper: Callable[[int], bool]) -> str:
    """``form`` with every byte ``%XX``-encoded, in upper-case hex where ``upper(index)``."""
    return "".join(f"%{b:02X}" if upper(i) else f"%{b:02x}" for i, b in enumerate(form))


def _encoded(value: str, form: bytes, codec: str) -> Iterator[tuple[str, str]]:
    """``(how, text)``: ``form`` (``value`` encoded in ``codec``) spelled as services spell bytes."""
    yield f"{codec}: base64", base64.b64encode(form).decode()
    yield f"{codec}: base64 url-safe, no padding", base64.urlsafe_b64encode(form).decode().rstrip("=")
    yield f"{codec}: Basic credential", "Basic " + base64.b64encode(b"admin:" + form).decode()
    yield f"{codec}: hex", form.hex()
    yield f"{codec}: HEX", form.hex().upper()
    yield f"{codec}: URL-encoded", quote(form, safe="")
    yield f"{codec}: URL-encoded, / kept", quote(form)
    yield f"{codec}: URL-encoded, lower-case hex", re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), quote(form, safe=""))
    yield f"{codec}: URL-encoded, hex case mixed", _url(form, lambda i: i % 2 == 0)
    yield (
        f"{codec}: only the non-ASCII URL-encoded",
        "".join(c if c.isascii() else _url(c.encode(codec), bool) for c in value),
    )
    yield f"{codec}: Python bytes repr", repr(form)
    yield f"{codec}: quoted-printable", quopri.encodestring(form).decode()
    yield f"{codec}: URL-encoded in a JSON string", json.dumps({"pw": quote(form, safe="")}).replace("%", "\\u0025")


def _showings(value: str) -> Iterator[tuple[str, str]]:
    """``(how, text)``: each way the round-11 services showed ``value``'s bytes."""
    raw = value.encode()
    yield "UTF-8 read as Latin-1", raw.decode("latin-1")
    yield "UTF-8 read as cp1252 (Java: undefined as U+FFFD)", raw.decode("cp1252", "replace")
    yield "UTF-8 read as cp1252 (WHATWG/Windows)", _cp1252_web(raw)
    yield "UTF-8 read as Latin-1, upper-cased", raw.decode("latin-1").upper()
    yield "Python bytes repr", repr(raw)
    yield "Python bytes repr in a JSON string", json.dumps(repr(raw))
    headers = repr((b"HTTP/1.1", 401, [(b"X-Debug-Credential", b"admin/" + raw)]))
    yield "httpcore2 DEBUG headers", f"receive_response_headers.complete return_value={headers}"
    yield "quoted-printable of UTF-8", quopri.encodestring(raw).decode()
    yield "HTML entities of the UTF-8 bytes", "".join(f"&#x{b:X};" for b in raw)
    for form, codec in _single_byte(value).items():
        yield from _encoded(value, form, codec)


CASES = [(label, how, text) for label, value in HELD.items() for how, text in _showings(value)]


@pytest.mark.parametrize(("label", "how", "shown"), CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_a_non_ascii_secret_shown_as_its_bytes_in_another_charset_is_masked(label: str, how: str, shown: str) -> None:
    value = HELD[label]
    secrets = Secrets()
    secrets.add(value)
    text = f"Login failed for {shown} (end)"
    assert secrets.found_in(text), how
    assert secrets.found_in(json.dumps({"said": text})), how  # what the upstream sieve searches
    masked = secrets.masked(text)
    assert shown not in masked and value not in masked, (how, masked)
    assert masked == MASK or (masked.startswith("Login failed for") and MASK in masked), (how, masked)


def test_an_ascii_secret_gets_no_charset_spellings() -> None:
    """Its bytes are the same in UTF-8, Latin-1 and cp1252: nothing to add, nothing to pay."""
    assert _charset_spellings("ascii-only-Secret-42") == set()
    assert _charset_spellings("Pa$$ w0rd&<x>/é")  # and a non-ASCII one gets some


@pytest.mark.parametrize(
    "text",
    [
        "café Ã© \\xc3\\xa9 =C3=A9 %E9 %C3%A9 6c6f72656d",  # bytes of é, not of the secret
        "Pa$$ w0rd&<x>/ and é apart, Pa$$ w0rd&<x>/\\xe8",  # its start, another last byte
        "b'Pa$$ w0rd&<x>/\\xc3\\xa8'",  # the repr of another secret's bytes
    ],
)
def test_a_text_with_other_bytes_is_left_as_it_came(text: str) -> None:
    secrets = Secrets()
    secrets.add("Pa$$ w0rd&<x>/é")
    assert not secrets.found_in(text), text
    assert secrets.masked(text) == text


def test_a_library_log_line_with_a_non_ascii_secret_in_a_bytes_repr_is_masked() -> None:
    """httpcore2 logs response headers as a list of bytes pairs: a password an instance echoed in a
    header reached the log as ``b'admin/P\\xc3\\xa4sswort-geheim42'``."""
    password = "Pässwort-geheim42"
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("httpcore2.http11")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    masked: Callable[[str], str] = Secrets.of("a ServiceNow instance", [password]).masked
    try:
        with library_logs_masked(masked):
            headers = [(b"X-Debug-Credential", f"admin/{password}".encode()), (b"Content-Length", b"2")]
            logger.debug("receive_response_headers.complete return_value=%r", (b"HTTP/1.1", 401, b"", headers))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    logged = out.getvalue()
    assert logged and "geheim42" not in logged and MASK in logged, logged
