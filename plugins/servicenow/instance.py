"""Table API calls on one instance: :class:`InstanceClient`, through that instance's ``httpx2.AsyncClient``.

Every call is retried after a 429 with the instance's shared back-off held, streamed within
``max_response_bytes``, and fails with a redacted :class:`~.errors.ServiceNowError` or
``NotFound``; a ``jwt_bearer`` instance's calls carry their :class:`Caller`'s user token.
"""

from __future__ import annotations

import contextlib
import copy
import email.utils
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from json import loads as json_loads
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import anyio
import httpx2

from mcp_providers.credentials import Credential, Upstream
from mcp_providers.errors import NotFound, TooLarge
from mcp_providers.identity import Principal
from mcp_providers.plugins.servicenow.auth_settings import ApiKeyAuth, BasicAuth, JwtBearerAuth
from mcp_providers.plugins.servicenow.backoff import Backoff, LocalBackoff, wait_turn
from mcp_providers.plugins.servicenow.errors import ServiceNowError, clip
from mcp_providers.plugins.servicenow.paging import Page, page_of
from mcp_providers.plugins.servicenow.query import check_sys_id, check_table
from mcp_providers.plugins.servicenow.redact import Redactor
from mcp_providers.plugins.servicenow.schema import normalise
from mcp_providers.plugins.servicenow.settings import InstanceSettings

if TYPE_CHECKING:
    import tenacity

__all__ = ["Answer", "Caller", "CredentialSource", "InstanceClient"]

log = logging.getLogger(__name__)

UNSAID_WAIT_SECONDS = 1.0
"""The first wait after a 429 without ``Retry-After`` (seconds); each next one doubles, up to 8 times
this. A module setting so that tests which meet such 429s can shorten what they wait out."""


class _RateLimited(Exception):
    """A 429 whose wait is within the limit: the request is tried again after the back-off."""

    def __init__(self, answer: Answer, wait: float) -> None:
        super().__init__(f"HTTP 429, wait {wait:g} s")
        self.answer, self.wait = answer, wait


def _say_the_wait(instance: str, what: str) -> Callable[[tenacity.RetryCallState], None]:
    """A tenacity ``before_sleep`` that logs the wait of the 429 the attempt ended with."""

    def say(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = error.wait if isinstance(error, _RateLimited) else 0.0
        log.info("instance %s: %s rate-limited (429); every request to it waits %g s", instance, what, wait)

    return say


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer read within the budget: status, headers and the whole body."""

    status: int
    headers: httpx2.Headers
    body: bytes


class CredentialSource(Protocol):
    """What a request offers for per-user access: its principal and the broker's credentials
    (:class:`~mcp_providers.providers.ReadRequest`, ``ToolCall``, ``CompletionRequest``)."""

    @property
    def principal(self) -> Principal: ...

    async def credential(self, upstream: Upstream) -> Credential: ...

    async def forget_credential(self, upstream: Upstream, stale: Credential | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """How one request's calls to a ``jwt_bearer`` instance get and drop its user token."""

    user: str
    """The ServiceNow user value acted as (for messages)."""
    credential: Callable[[], Awaitable[Credential]]
    forget: Callable[[Credential], Awaitable[None]]


class InstanceClient:
    """Table API calls on one instance, through that instance's own ``httpx2.AsyncClient``.

    :param redactor: masks every secret the plugin knows in each message that leaves.
    :param backoff: the 429 back-off this instance shares with every other request to it.
    """

    def __init__(self, settings: InstanceSettings, http: httpx2.AsyncClient | None, error: str | None = None, *,
                 redactor: Redactor | None = None, backoff: Backoff | None = None) -> None:  # fmt: skip
        self.settings = settings
        self.name = settings.name
        self._http = http
        self._error = error
        self.redactor = redactor or Redactor()
        self.backoff: Backoff = backoff or LocalBackoff()
        self.caller: Caller | None = None
        """Whose user token the calls carry (``jwt_bearer`` instances only; see :meth:`acting`)."""

    def acting(self, caller: Caller) -> InstanceClient:
        """This client for one request of ``caller``: the same HTTP client, back-off and redactor,
        every call carrying that caller's user token (never the client's; nothing is switched)."""
        bound = copy.copy(self)
        bound.caller = caller
        return bound

    async def aclose(self) -> None:
        """Close the instance's HTTP client (the pool does, when its last user leaves)."""
        if self._http is not None:
            await self._http.aclose()

    async def list_records(
        self,
        table: str,
        *,
        query: str = "",
        fields: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> Page:
        """``GET /api/now/table/{table}``: one page of records matching the encoded ``query``.

        :param query: an encoded query made by :func:`~.query.build_query` (never raw caller text).
        :param fields: ``sysparm_fields``; empty for every field.
        :param limit: ``sysparm_limit``; the instance's ``page_size`` when ``None``.
        :param offset: ``sysparm_offset``.
        :returns: the page, records normalised (``sysparm_display_value=all`` is always asked).
        :raises ServiceNowError: the instance failed or refused (see the module docstring).
        :raises TooLarge: the answer is over ``max_response_bytes``.
        """
        check_table(table)
        size = self.settings.page_size if limit is None else limit
        params = {
            "sysparm_query": query,
            "sysparm_limit": str(size),
            "sysparm_offset": str(offset),
            "sysparm_display_value": "all",
            "sysparm_exclude_reference_link": "true",
        }
        if fields:
            params["sysparm_fields"] = ",".join(fields)
        what = f"query of {table}"
        answer = await self._request("GET", f"/api/now/table/{table}", params=params, what=what)
        records = self._json(answer, what).get("result")
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise self._fail(f"instance {self.name!r}: {what} answered without a result list")
        total_header = answer.headers.get("x-total-count")
        total = int(total_header) if total_header and total_header.isdigit() else None
        return page_of(normalise(table, records), total=total, offset=offset, limit=size,
                     link=answer.headers.get("link"))  # fmt: skip

    async def get_record(self, table: str, sys_id: str, *, fields: Sequence[str] = ()) -> dict[str, Any]:
        """``GET /api/now/table/{table}/{sys_id}``: the record, normalised.

        :raises NotFound: no such record (or an ACL hides it).
        :raises ServiceNowError: any other failure.
        """
        check_table(table)
        check_sys_id(sys_id)
        params: dict[str, str] = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true"}
        if fields:
            params["sysparm_fields"] = ",".join(fields)
        what = f"read of {table} record {sys_id}"
        answer = await self._request("GET", f"/api/now/table/{table}/{sys_id}", params=params, what=what)
        return self._result(table, answer, what)

    async def create_record(self, table: str, values: Mapping[str, str]) -> dict[str, Any]:
        """``POST /api/now/table/{table}`` with ``values``; returns the created record, normalised.

        :raises ServiceNowError: the instance refused (e.g. a data policy, 403) or failed.
        """
        check_table(table)
        what = f"insert into {table}"
        params = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true"}
        answer = await self._request("POST", f"/api/now/table/{table}", params=params, json=dict(values), what=what)
        return self._result(table, answer, what)

    async def update_record(self, table: str, sys_id: str, values: Mapping[str, str]) -> dict[str, Any]:
        """``PATCH /api/now/table/{table}/{sys_id}``: change only the supplied fields (never PUT).

        :returns: the record after the change, normalised.
        :raises NotFound: no such record.
        :raises ServiceNowError: the instance refused or failed.
        """
        check_table(table)
        check_sys_id(sys_id)
        what = f"update of {table} record {sys_id}"
        params = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true"}
        answer = await self._request(
            "PATCH", f"/api/now/table/{table}/{sys_id}", params=params, json=dict(values), what=what
        )
        return self._result(table, answer, what)

    # -- internals

    def _fail(self, message: str, *, status: int | None = None, sn_message: str | None = None,
              sn_detail: str | None = None) -> ServiceNowError:  # fmt: skip
        """A :class:`ServiceNowError` whose message and data are redacted."""
        r = self.redactor
        return ServiceNowError(r.text(message), instance=self.name, status=status,
                               sn_message=r.text(sn_message) if sn_message else None,
                               sn_detail=r.text(sn_detail) if sn_detail else None)  # fmt: skip

    async def _request(self, method: str, path: str, *, params: Mapping[str, str], what: str,
                       json: Any = None) -> Answer:  # fmt: skip
        if self._http is None or self._error is not None:
            raise self._fail(self._error or f"instance {self.name!r} is not open")
        if not self.settings.per_user:
            return await self._attempts(method, path, params=params, json=json, what=what, headers=None)
        caller = self.caller
        if caller is None:  # a programming error: per-user instances are only reached through acting()
            raise self._fail(f"instance {self.name!r}: {what} has no caller to act for (auth type jwt_bearer)")
        credential = await caller.credential()
        self.redactor.add_issued(credential.token)  # an instance may echo it in an error
        answer = await self._attempts(method, path, params=params, json=json, what=what,
                                      headers={"Authorization": f"Bearer {credential.token}"})  # fmt: skip
        if answer.status != 401:
            return answer
        # the instance no longer takes this user's token (expired early, revoked): once more, anew
        await caller.forget(credential)  # only this one: a concurrent request may have a new one already
        credential = await caller.credential()
        self.redactor.add_issued(credential.token)
        answer = await self._attempts(method, path, params=params, json=json, what=what,
                                      headers={"Authorization": f"Bearer {credential.token}"})  # fmt: skip
        if answer.status == 401:
            raise self._failure(
                answer,
                what,
                suffix=f"; a new token of user {caller.user!r} was refused too "
                "(the user may be locked out or lack access to the instance)",
            )
        return answer

    async def _attempts(self, method: str, path: str, *, params: Mapping[str, str], what: str, json: Any,
                        headers: Mapping[str, str] | None) -> Answer:  # fmt: skip
        """One request, tried again (tenacity) after each 429, at most ``max_retries`` times.

        Each attempt first waits for the instance's shared back-off; a 429 holds it for the answer's
        ``Retry-After`` (without one: 1, 2, 4, 8, 8, ... s), so every request to the instance waits,
        not this one alone. A wait over ``max_retry_after_seconds`` fails at once."""
        import tenacity  # at the first request: importing the plugin does not pay for it

        retries = self.settings.max_retries
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(retries + 1),
            retry=tenacity.retry_if_exception_type(_RateLimited),
            before_sleep=_say_the_wait(self.name, what),
            sleep=anyio.sleep,
            reraise=True,
        )
        first = UNSAID_WAIT_SECONDS  # the wait when the 429 gives no Retry-After: 1, 2, 4, 8, 8, ... s
        unsaid = tenacity.wait_exponential(multiplier=first, max=8 * first)
        try:
            async for attempt in retrying:
                with attempt:
                    await wait_turn(self.backoff, self.name)
                    answer = await self._send(method, path, params=params, json=json, what=what, headers=headers)
                    log.debug("instance %s: %s %s -> %s", self.name, method, path, answer.status)
                    if answer.status == 429:
                        await self._hold(answer, what, float(unsaid(attempt.retry_state)))
                    return answer
        except _RateLimited as exc:
            raise self._failure(
                exc.answer,
                what,
                suffix=f"; still rate-limited after {retries} retries; wait {exc.wait:g} s (Retry-After) "
                "before trying again",
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _hold(self, answer: Answer, what: str, unsaid: float) -> NoReturn:
        """Hold the instance's back-off for a 429's wait (``unsaid`` without ``Retry-After``).

        :raises _RateLimited: the wait is within ``max_retry_after_seconds`` (try again).
        :raises ServiceNowError: it is not (the message says both)."""
        wait = self._retry_after(answer)
        wait = unsaid if wait is None else wait
        cap = self.settings.max_retry_after_seconds
        await self.backoff.hold(self.name, min(wait, cap))
        if wait > cap:
            raise self._failure(
                answer,
                what,
                suffix=f"; the instance asks to wait {wait:g} s (Retry-After) "
                f"before the next request, more than max_retry_after_seconds = {cap:g}",
            )
        raise _RateLimited(answer, wait)

    async def _send(self, method: str, path: str, *, params: Mapping[str, str], json: Any, what: str,
                    headers: Mapping[str, str] | None = None) -> Answer:  # fmt: skip
        """One request, its body streamed and refused once over ``max_response_bytes``."""
        assert self._http is not None
        budget = self.settings.max_response_bytes
        try:
            request = self._http.build_request(method, path, params=params, json=json, headers=headers)
            response = await self._http.send(request, stream=True)
            try:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > budget:
                    raise self._too_large(what, budget, read=0, declared=int(declared))
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > budget:
                        raise self._too_large(what, budget, read=len(body))
            finally:
                await response.aclose()
        except httpx2.TimeoutException as exc:
            raise self._fail(
                f"instance {self.name!r}: {what} got no answer within {self.settings.timeout_seconds:g} s "
                f"({type(exc).__name__}); the instance may be overloaded, or raise timeout_seconds"
            ) from exc
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            raise self._fail(f"instance {self.name!r}: {what} could not reach {self.settings.url} "
                             f"({type(exc).__name__})") from exc  # fmt: skip
        except httpx2.HTTPError as exc:
            raise self._fail(
                f"instance {self.name!r}: {what}: the connection to {self.settings.url} broke before the "
                f"answer was complete ({type(exc).__name__}); nothing from it was used, try again"
            ) from exc
        return Answer(response.status_code, response.headers, bytes(body))

    def _too_large(self, what: str, budget: int, *, read: int, declared: int | None = None) -> TooLarge:
        size = f"declares {declared} bytes" if declared is not None else f"is larger (stopped after {read} bytes)"
        return TooLarge(
            f"instance {self.name!r}: {what}: the answer {size}, over max_response_bytes = {budget}; ask for "
            f"fewer records (limit) or fewer fields, or raise max_response_bytes",
            data={"instance": self.name, "budget": budget, "read": read},
        )

    @staticmethod
    def _retry_after(answer: Answer) -> float | None:
        """Seconds the answer's ``Retry-After`` asks for (seconds or an HTTP date), if it says."""
        value = answer.headers.get("retry-after", "").strip()
        if value.isdigit():
            return float(value)
        if value:
            with contextlib.suppress(TypeError, ValueError):
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time())
        return None

    def _json(self, answer: Answer, what: str) -> dict[str, Any]:
        if answer.status >= 300:
            raise self._failure(answer, what)
        try:
            body = json_loads(answer.body)
        except ValueError:
            raise self._fail(
                f"instance {self.name!r}: {what} answered HTTP {answer.status} with a body that is not "
                f"valid JSON ({len(answer.body)} bytes)",
                status=answer.status,
            ) from None
        if not isinstance(body, dict):
            raise self._fail(f"instance {self.name!r}: {what} answered JSON that is not an object")
        return body

    def _result(self, table: str, answer: Answer, what: str) -> dict[str, Any]:
        result = self._json(answer, what).get("result")
        if not isinstance(result, dict):
            raise self._fail(f"instance {self.name!r}: {what} answered without a result record")
        return normalise(table, [result])[0]

    def _failure(self, answer: Answer, what: str, suffix: str = "") -> ServiceNowError | NotFound:
        status = answer.status
        sn_message = sn_detail = None
        with contextlib.suppress(ValueError):
            body = json_loads(answer.body)
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, dict):
                masked = self.redactor.text
                sn_message = clip(str(error["message"]), masked) if error.get("message") else None
                sn_detail = clip(str(error["detail"]), masked) if error.get("detail") else None
        said = f": {sn_message}" + (f" ({sn_detail})" if sn_detail else "") if sn_message else ""
        hint = {
            401: f"; the instance rejected the credentials configured for {self.name!r} ({self._auth_hint()})",
            403: "; the user lacks the role or ACL for this operation",
        }.get(status, "")
        if status >= 500:
            hint = "; the instance failed, try again later"
        message = f"instance {self.name!r}: {what} failed with HTTP {status}{said}{hint}{suffix}"
        if status == 404:
            return NotFound(self.redactor.text(message), data={"instance": self.name, "status": 404})
        return self._fail(message, status=status, sn_message=sn_message, sn_detail=sn_detail)

    def _auth_hint(self) -> str:
        auth = self.settings.auth
        if isinstance(auth, BasicAuth):
            return f"user {auth.username!r}, password from {auth.password_env}"
        if isinstance(auth, ApiKeyAuth):
            return f"API key from {auth.api_key_env}"
        if isinstance(auth, JwtBearerAuth):
            return f"the user token of {self.caller.user!r}" if self.caller else "a user token"
        return f"OAuth client {auth.client_id!r}"
