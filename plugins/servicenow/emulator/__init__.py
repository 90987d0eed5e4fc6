"""A local ServiceNow Table API emulator: a real HTTP server on 127.0.0.1 for tests and demos.

One :class:`Emulator` is one instance (its own data, users, OAuth clients and API keys), served by
uvicorn in a background thread on an ephemeral port, so it can be used from sync or async code::

    with Emulator("dev", users={"admin": "s3cret"}) as dev:
        httpx2.get(f"{dev.base_url}/api/now/table/incident", auth=("admin", "s3cret"))
        dev.fail_next(status=429, retry_after="1")   # the next table request gets a 429
        dev.requests                                  # what was received, and from whom

Served (paths also under ``/api/now/v2/table``):

- ``GET /api/now/table/{table}``: ``sysparm_query`` (``^``, ``^OR``, ``^NQ``, ``=``, ``!=``, ``>``,
  ``>=``, ``<``, ``<=``, ``LIKE``, ``NOTLIKE``, ``STARTSWITH``, ``ENDSWITH``, ``IN``, ``NOT IN``,
  ``ISEMPTY``, ``ISNOTEMPTY``, ``ORDERBY``/``ORDERBYDESC``, one level of dot-walking, trailing
  ``^EQ``; ``^^`` is refused with 400 rather than split; a term naming an unknown field is
  ignored, as ServiceNow does by default), ``sysparm_fields``, ``sysparm_limit`` (default and
  cap ``default_limit``), ``sysparm_offset``, ``sysparm_display_value`` (``true``/``false``/``all``),
  ``sysparm_exclude_reference_link``, ``sysparm_no_count``, ``sysparm_suppress_pagination_header``;
  answers carry ``X-Total-Count`` and, when there is more than one page, a ``Link`` header.
- ``GET|PATCH|PUT|DELETE /api/now/table/{table}/{sys_id}`` and ``POST /api/now/table/{table}``
  (201; numbers minted for incident, problem and change_request). ``comments`` and ``work_notes``
  are journal fields: writes append a ``sys_journal_field`` row and the field reads back empty.
- ``GET /api/now/stats/{table}`` (the Aggregate API): ``sysparm_count``, ``sysparm_query``,
  ``sysparm_group_by``, ``sysparm_display_value``; answers ``{"result": {"stats": {"count": "N"}}}``
  or, grouped, ``{"result": [{"stats": {"count": "N"}, "groupby_fields": [{"field", "value"}]}]}``.
- ``POST /oauth_token.do`` (form body): ``client_credentials``, ``password`` and ``refresh_token``
  grants, and with ``jwt_bearer=`` the JWT bearer grant (a token acting as one ``sys_user``, see
  :class:`Emulator`); tokens last ``token_lifetime_seconds`` or until :meth:`Emulator.expire_tokens`
  (or :meth:`Emulator.revoke_user_tokens`).
- Auth on the Table API: ``Authorization: Basic``, ``Authorization: Bearer <token>`` or
  ``x-sn-apikey``. Failures use ServiceNow's envelope
  ``{"error": {"message": ..., "detail": ...}, "status": "failure"}``.

Faults are queued with :meth:`Emulator.fail_next` (status, ``Retry-After``, delay, malformed JSON)
and consumed one per request. :attr:`Emulator.requests` logs every request with the identity it
presented (``basic:<user>``, ``oauth:<client>[/<user>]``, ``jwt:<client>/<user_name>`` for a user
token, ``apikey:<label>``) and never a secret.
All scalar values are strings, as in the real API.

Modules: :mod:`.app` (:class:`Emulator`), :mod:`.api` (Table and Aggregate API), :mod:`.auth`
(credentials, token endpoint), :mod:`.jwt_bearer` (checking a JWT bearer assertion), :mod:`.store`
(data, visibility, rendering), :mod:`.encoded_query`, :mod:`.faults` and :mod:`.demo`.
"""

from mcp_providers.plugins.servicenow.emulator.app import Emulator
from mcp_providers.plugins.servicenow.emulator.demo import DEMO_ENV, demo_instances, main, serve_forever
from mcp_providers.plugins.servicenow.emulator.encoded_query import QuerySyntaxError, parse_encoded_query
from mcp_providers.plugins.servicenow.emulator.faults import Fault, LoggedRequest

__all__ = [
    "DEMO_ENV",
    "Emulator",
    "Fault",
    "LoggedRequest",
    "QuerySyntaxError",
    "demo_instances",
    "main",
    "parse_encoded_query",
    "serve_forever",
]
