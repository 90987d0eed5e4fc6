"""Which Host and Origin headers an HTTP server accepts (the DNS-rebinding policy), from the
addresses it is bound to: :func:`transport_policy`, the address helpers ``serve`` checks its
``--host`` with, and what a refusal says (:func:`explained`)."""

from __future__ import annotations

import functools
import ipaddress
import socket

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _any_port(name: str) -> list[str]:
    """``name`` alone (a client of the default port sends no port: ``Host: localhost``) and on
    any port (the SDK's ``NAME:*``)."""
    return [name, f"{name}:*"]


_LOOPBACK_HOSTS = [h for name in _LOOPBACK for h in _any_port(name)]
_LOOPBACK_ORIGINS = [f"http://{h}" for h in _LOOPBACK_HOSTS]


def _host_name(host: str) -> str:
    return host.strip().strip("[]").lower()


def bound_addresses(host: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]:
    """The addresses a listening socket on ``host`` binds, as the OS reads it; ``()`` if it cannot.

    Resolved as ``loop.create_server`` (uvicorn) and ``socket.bind`` do:
    ``getaddrinfo(host, 0, type=SOCK_STREAM, flags=AI_PASSIVE)``, so IPv4 literals have
    ``inet_aton`` semantics (``0.0`` and ``0x0`` are 0.0.0.0, ``127.1`` and ``2130706433`` are
    127.0.0.1), an empty host is every interface and names are looked up. IPv4-mapped IPv6
    addresses (``::ffff:0.0.0.0``) are given as the IPv4 address they bind.
    """
    return _resolved(_host_name(host))


@functools.lru_cache(maxsize=64)
def _resolved(name: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]:
    try:
        infos = socket.getaddrinfo(name or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return ()
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address not in found:
            found.append(address)
    return tuple(found)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` binds (:func:`bound_addresses`) is loopback: ``127.0.0.1``,
    ``localhost``, ``::1``, the rest of 127.0.0.0/8 however spelled (``127.1``, ``0x7f.1``)."""
    addresses = bound_addresses(host)
    return bool(addresses) and all(a.is_loopback for a in addresses)


def is_wildcard(host: str) -> bool:
    """Whether ``host`` binds every interface, however spelled (:func:`bound_addresses`): ``0.0.0.0``,
    ``0``, ``0.0``, ``0x0``, ``::``, ``[::]``, ``0:0::0``, ``::ffff:0.0.0.0``, empty; ``*`` too."""
    if _host_name(host) == "*":
        return True
    return any(a.is_unspecified for a in bound_addresses(host))


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def transport_policy(
    host: str, allow_hosts: list[str] | None = None, explicit: TransportSecuritySettings | None = None
) -> TransportSecuritySettings:
    """The one Host/Origin (DNS-rebinding) policy for serving on ``host``; never ``None``.

    ``explicit`` settings win. A loopback host accepts the loopback names (``localhost``,
    ``127.0.0.1``, ``[::1]``) with no port or any port. Any other
    host accepts its own name (a specific address or hostname), the names in ``allow_hosts``
    (``NAME`` or ``NAME:PORT``; a bare name on any port) and, for a wildcard bind (which also
    listens on loopback), the loopback names; every other Host is refused with 421 and every other
    Origin with 403.
    """
    if explicit is not None:
        return explicit
    if is_loopback(host) and not allow_hosts:
        own = _bracketed(_host_name(host))  # a loopback spelling of its own (127.1) is its clients' Host
        extra = [] if own in _LOOPBACK else _any_port(own)
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=_LOOPBACK_HOSTS + extra,
            allowed_origins=_LOOPBACK_ORIGINS + [f"http://{h}" for h in extra],
        )
    names = [] if is_wildcard(host) else [_bracketed(_host_name(host))]
    names += allow_hosts or []
    hosts = [h for n in names for h in ((n,) if ":" in n.lstrip("[").split("]")[-1] else (n, f"{n}:*"))]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    if is_wildcard(host) or is_loopback(host):
        hosts, origins = hosts + _LOOPBACK_HOSTS, origins + _LOOPBACK_ORIGINS
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def explained(refused: Response, request: Request) -> Response:
    """The SDK's refusal of a Host (421) or an Origin (403) its policy does not name, saying which
    value and where a name is added: ``serve --allow-host``, or embedded, ``transport_security``
    (the SDK's words alone pointed nowhere); any other refusal as it is."""
    if refused.status_code == 421:
        host = request.headers.get("host", "")[:100]
        return PlainTextResponse(
            f"Invalid Host header {host!r}: not a name this server answers to (DNS-rebinding protection); "
            f"name it with serve --allow-host {host or 'NAME'} (NAME or NAME:PORT), or, embedded, in the "
            "allowed_hosts of mount(..., transport_security=...)",
            421,
        )
    if refused.status_code == 403:
        origin = request.headers.get("origin", "")[:100]
        return PlainTextResponse(
            f"Invalid Origin header {origin!r}: a page of another origin may not call this server "
            "(DNS-rebinding protection); serve accepts the origins of its own names and of --allow-host, "
            "embedded the allowed_origins of mount(..., transport_security=...)",
            403,
        )
    return refused
