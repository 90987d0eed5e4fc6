"""Round 4 item 10: the routes beside the MCP path keep its Host/Origin (DNS-rebinding) policy.

A page the operator visits can rebind its own name to 127.0.0.1 and read what a server on the
operator's machine answers under that name. The MCP path refused a foreign Host (421) and Origin
(403); ``/healthz``, ``/readyz``, ``/metrics``, ``/status``, ``/admin/reload`` and any other path
beside it answered. Raw HTTP/1.1 on loopback, the app ``serve --http`` serves.
"""

from __future__ import annotations

import pytest
from serve_support import request, served

from mcp_providers._serve.transport.ops import _address_literal

pytestmark = pytest.mark.slow

BESIDE = [
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/status.json"),  # not served here (no [server.admin]): refused before it would 404
    ("POST", "/admin/reload"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/anything-else"),
]


def test_round4_item10_routes_beside_the_mcp_path_refuse_a_rebound_host_and_origin() -> None:
    with served() as port:
        own = f"127.0.0.1:{port}"
        for method, path in BESIDE:
            for host in ("attacker.example", f"attacker.example:{port}", f"localhost.attacker.example:{port}"):
                status, _, body = request(port, method, headers={"host": host}, path=path)
                assert status == 421, (method, path, host, status, body)
            for origin in ("http://attacker.example", f"http://attacker.example:{port}", "null"):
                status, _, body = request(port, method, headers={"host": own, "origin": origin}, path=path)
                assert status == 403, (method, path, origin, status, body)
        for path in ("/healthz", "/readyz", "/metrics"):  # the server's own names still answer
            for host in (own, f"localhost:{port}"):
                assert request(port, "GET", headers={"host": host}, path=path)[0] == 200, (path, host)
            same_origin = {"host": own, "origin": f"http://{own}"}
            assert request(port, "GET", headers=same_origin, path=path)[0] == 200, path


def test_round4_item10_an_address_literal_host_is_no_rebinding_and_probes_send_one() -> None:
    """The kubelet probes ``http://<pod IP>:8000/readyz`` and Prometheus scrapes the pod address:
    a Host that is an IP address cannot come from a rebound name, so it is accepted beside the MCP
    path; an Origin is still judged."""
    with served() as port:
        for host in ("10.1.2.3:8000", "10.1.2.3", "[fd00::5]:8000"):
            assert request(port, "GET", headers={"host": host}, path="/readyz")[0] == 200, host
        attacker = {"host": "10.1.2.3:8000", "origin": "http://attacker.example"}
        assert request(port, "GET", headers=attacker, path="/readyz")[0] == 403


@pytest.mark.parametrize(
    ("host", "literal"),
    [("10.1.2.3", True), ("10.1.2.3:80", True), ("[::1]:8000", True), ("[fd00::5]", True),
     ("fd00::5", False), ("10.1.2.3.nip.io", False), ("127.1", False), ("10.1.2.3:x", False),
     ("attacker.example:80", False), ("", False), ("[::1]x", False)],
)  # fmt: skip
def test_round4_item10_address_literals(host: str, literal: bool) -> None:
    assert _address_literal(host) is literal


def test_a_refused_host_or_origin_says_which_and_how_to_allow_it() -> None:
    """Tester seventeen: a Host the policy does not name got the SDK's bare "Invalid Host header",
    with nothing pointing to where the names are set (a test client's ``testserver``, a name behind
    a proxy). The refusal names the header's value and both places to add a name."""
    with served() as port:
        for path in ("/mcp", "/healthz"):
            status, _, raw = request(port, "GET", headers={"host": "proxy.example"}, path=path)
            body = raw.decode()
            assert status == 421 and "'proxy.example'" in body, body
            assert "--allow-host proxy.example" in body and "transport_security" in body, body
            origin = {"host": f"127.0.0.1:{port}", "origin": "http://page.example"}
            status, _, raw = request(port, "GET", headers=origin, path=path)
            body = raw.decode()
            assert status == 403 and "'http://page.example'" in body and "allowed_origins" in body, body
