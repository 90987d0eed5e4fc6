"""Bearer-token verifiers for streamable HTTP, each behind the SDK's ``TokenVerifier`` seam.

Every verifier answers ``verify_token(token) -> AccessToken | None`` and leaves the finished
:class:`~mcp_providers.identity.Principal` in ``AccessToken.claims[PRINCIPAL_CLAIM]``:

- :class:`StaticTokenVerifier`: the tokens named in ``[server.auth] tokens`` (``mode = "static"``);
- :class:`JwtVerifier`: JWT access tokens checked against the issuer's JWKS (``mode = "jwt"``);
- :class:`IntrospectionVerifier`: RFC 7662 introspection (``mode = "introspection"``).

A token that cannot be checked (the identity provider is down and nothing is cached) raises
:class:`IdentityUnavailable`; the HTTP layer answers it with 503 and ``Retry-After``, never a pass.
:func:`resource_server` builds the verifier and what the HTTP layer publishes from the config.
"""

from mcp_providers._serve.identity.errors import IdentityUnavailable as IdentityUnavailable
from mcp_providers._serve.identity.introspection import IntrospectionVerifier as IntrospectionVerifier
from mcp_providers._serve.identity.jwt import JwtVerifier as JwtVerifier
from mcp_providers._serve.identity.server import ResourceServer as ResourceServer
from mcp_providers._serve.identity.server import resource_server as resource_server
from mcp_providers._serve.identity.static import MIN_TOKEN_LENGTH as MIN_TOKEN_LENGTH
from mcp_providers._serve.identity.static import StaticTokenVerifier as StaticTokenVerifier
