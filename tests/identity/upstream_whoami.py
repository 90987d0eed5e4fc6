"""An upstream MCP server protected by the test authorization server (an SDK v2 ``MCPServer``,
streamable HTTP, 2026-07-28), for the token exchange tests: it answers who it sees.

    python upstream_whoami.py PORT ISSUER [REVOKED]

Its token verifier checks each bearer token with the issuer's published keys (JWKS, RS256):
signature, ``iss`` = ISSUER, ``aud`` = its own URL (``http://127.0.0.1:PORT/mcp``), ``exp``, and
the ``mcp:read`` scope; any other token is answered 401. The tool ``whoami`` and the resource
``whoami://me`` answer the token's ``sub`` and ``client_id``. Every token it accepted is printed on
stderr as ``SEEN <sub> <sha256 of the token>`` so a test can check which tokens reached it; a
token whose SHA-256 (hex) is a line of the file REVOKED is refused as if revoked.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

PORT, ISSUER = int(sys.argv[1]), sys.argv[2]
REVOKED = Path(sys.argv[3]) if len(sys.argv) > 3 else None
URL = f"http://127.0.0.1:{PORT}/mcp"
KEYS = jwt.PyJWKClient(f"{ISSUER}/jwks")


class JwksVerifier:
    """The SDK's ``TokenVerifier``: an RS256 JWT of ISSUER for URL, else ``None`` (401)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode()).hexdigest()
        if REVOKED is not None and REVOKED.exists() and digest in REVOKED.read_text().split():
            print("REFUSED revoked", file=sys.stderr, flush=True)
            return None
        try:
            key = KEYS.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=URL, issuer=ISSUER)
        except jwt.PyJWTError as exc:
            print(f"REFUSED {type(exc).__name__}", file=sys.stderr, flush=True)
            return None
        print(f"SEEN {claims['sub']} {digest}", file=sys.stderr, flush=True)
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            subject=str(claims["sub"]),
        )


def seen() -> str:
    token = get_access_token()
    assert token is not None  # the bearer middleware let nobody else in
    return json.dumps({"sub": token.subject, "client_id": token.client_id})


server = MCPServer(
    "whoami-upstream",
    version="1.0",
    token_verifier=JwksVerifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=URL, required_scopes=["mcp:read"]),
    log_level="WARNING",
)


@server.tool(description="Who the upstream sees: the bearer token's sub and client_id.")
def whoami() -> str:
    return seen()


@server.resource("whoami://me", mime_type="application/json")
def me() -> str:
    return seen()


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning")
