"""The bind-address checks judge the address the OS binds, not its spelling (issue 24 item 6).

``serve --http`` refuses a wildcard bind without ``--allow-host`` and warns off loopback; both read
:func:`bound_addresses`, which resolves a host as the socket call does. The truth here is the
kernel's: each spelling is bound on a real socket and ``getsockname`` says what it became.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket

import pytest
from cli_support import no_serving, run_cli

from mcp_providers._serve.transport.http_policy import bound_addresses, is_loopback, is_wildcard, transport_policy

# Named in the issue, then more of the kind (inet_aton forms, hex, octal, IPv6 and IPv4-mapped).
WILDCARDS_V4 = ["0.0", "0.0.0", "0000", "0x0", "000.000.000.000", "00", "0x00000000", "0.0x0", "0.0.00"]
WILDCARDS_V6 = ["::0", "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0", "[::ffff:0.0.0.0]", "0000::", "[0::0]"]
LOOPBACKS_V4 = ["127.1", "0x7f.1", "2130706433", "0177.0.0.1", "127.0.0.2", "0x7f000001", "127.255.255.254"]
LOOPBACKS_V6 = ["0:0:0:0:0:0:0:1", "[::1]", "::ffff:127.0.0.1", "::ffff:7f00:1"]
NEITHER = ["10.1.2.3", "1.2.3", "0.0.0.1", "192.168.0x1.1", "::2", "fe80::1"]


def _kernel_binds(host: str) -> str | None:
    """The address a socket bound to ``host`` reports (``None`` when the kernel refuses to bind it)."""
    name = host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as sock:
        try:
            sock.bind((name, 0))
        except OSError:
            return None
        return str(sock.getsockname()[0])


@pytest.mark.parametrize("host", WILDCARDS_V4 + WILDCARDS_V6)
def test_every_spelling_of_every_interface_is_a_wildcard(host: str) -> None:
    assert is_wildcard(host)
    assert not is_loopback(host)


@pytest.mark.parametrize("host", [*WILDCARDS_V4, "::0", "0:0:0:0:0:0:0:0", "[0::0]"])
def test_the_kernel_agrees_these_bind_every_interface(host: str) -> None:
    bound = _kernel_binds(host)
    if bound is None:
        pytest.fail(f"the kernel would not bind {host!r}")
    assert ipaddress.ip_address(bound).is_unspecified, bound
    assert is_wildcard(host)


@pytest.mark.parametrize("host", LOOPBACKS_V4 + LOOPBACKS_V6 + ["localhost", "LOCALHOST"])
def test_every_spelling_of_loopback_is_loopback(host: str) -> None:
    assert is_loopback(host)
    assert not is_wildcard(host)


@pytest.mark.parametrize("host", LOOPBACKS_V4)
def test_the_kernel_agrees_these_bind_loopback(host: str) -> None:
    bound = _kernel_binds(host)
    assert bound is not None and ipaddress.ip_address(bound).is_loopback, bound


@pytest.mark.parametrize("host", [*NEITHER, "no-such-host.invalid"])
def test_other_addresses_are_neither(host: str) -> None:
    assert not is_wildcard(host)
    assert not is_loopback(host)


def test_bound_addresses_are_what_getaddrinfo_gives_for_a_passive_socket() -> None:
    assert bound_addresses("0x0") == (ipaddress.ip_address("0.0.0.0"),)
    assert bound_addresses("1.2.3") == (ipaddress.ip_address("1.2.0.3"),)
    assert bound_addresses("::ffff:127.0.0.1") == (ipaddress.ip_address("127.0.0.1"),)
    assert bound_addresses("no-such-host.invalid") == ()


def test_a_loopback_spelling_answers_its_own_host_header_and_only_loopback_names() -> None:
    policy = transport_policy("127.1")
    assert "127.1:*" in policy.allowed_hosts and "127.0.0.1:*" in policy.allowed_hosts
    assert not any(h.startswith("evil") for h in policy.allowed_hosts)
    wide = transport_policy("0x0", ["api.example"])
    assert "api.example:*" in wide.allowed_hosts and "0x0:*" not in wide.allowed_hosts


@pytest.mark.parametrize("hostport", ["0.0:8123", "0x0:8123", "000.000.000.000:8123", "[::ffff:0.0.0.0]:8123",
                                      "[0:0:0:0:0:0:0:0]:8123"])  # fmt: skip
def test_serve_refuses_a_wildcard_spelling_without_allow_host(hostport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # In process (cli_support): a refusal that broke serves, which no_serving turns into exit 99.
    no_serving(monkeypatch)
    result = run_cli("serve", "--http", hostport, env={"COLUMNS": "400"})
    assert result.returncode == 2, result.stderr
    assert "--allow-host" in result.stderr and "every interface" in result.stderr
