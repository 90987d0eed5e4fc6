"""An upstream's questions (``elicitation/create``, ``sampling/createMessage``) relayed to the
downstream client, through the :class:`~mcp_providers.providers.ToolCall` that caused them.

The upstream client's callbacks (:meth:`Relay.elicitation`, :meth:`Relay.sampling`) find the tool
call that asked, relaying a question only to a caller it provably belongs to:

1. the context variable :data:`ASKING`, set around the forwarded ``tools/call``
   (:meth:`Relay.forwarding`), when that call has a request in flight on the session that asked:
   a 2026-07-28 upstream's ``InputRequiredResult`` is resolved in the calling task, and a
   2025-era HTTP upstream's request arriving on the call's own response stream carries the
   call's context too;
2. else (a 2025-era stdio upstream's request arrives in the session's receive task and names no
   request), the one request in flight on that session, when it is a tool call and every request
   sent on the session since it was opened came from the same caller (:func:`caller_key`: a
   caller nobody vouched for, such as every anonymous HTTP client, is one only over its own
   downstream connection): an upstream may still ask
   for a request that ended (answered, timed out, cancelled: it may ignore a cancel), so another
   caller's request, even long finished, leaves the question without a provable caller until
   the session is opened again;
3. else the upstream gets an error answer (``-32600``) saying why which call asked cannot be
   told, and no client is asked or shown anything: a question is never handed to a guessed caller.

One tool call asks at most :attr:`Bounds.per_call` questions, at most :attr:`Bounds.open` at
once (the upstream's ``max_questions_per_call``, ``max_open_questions_per_call``); the rest are
refused to the upstream, naming the setting.

The question then goes through ``call.elicit``/``call.sample``, so the core asks the downstream
client in its era: a server-to-client request (2025), or an input round (2026-07-28): the round
ends the downstream call, which ends the forwarded upstream call (even when the question arrived
in another task: :meth:`Asker.ask` hands the round's end to the calling task), and the client's
retry forwards the call again, where the upstream's same question finds its answer.

What the downstream cannot be asked (no capability, a refusal, a URL-mode form, a question
carrying a task, sampling with tools or non-text messages) is answered to the upstream as an MCP
error (``-32600``), so the upstream decides and the call still ends. While a question waits for its
answer, the upstream request's ``read_timeout`` is paused: a person answering is not a slow upstream.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types

from mcp_providers.identity import Principal
from mcp_providers.providers import Elicited, Sampled, ToolCall

__all__ = ["ASKING", "Asker", "Bounds", "Relay", "caller_key"]

T = TypeVar("T")
ASKING: ContextVar[Asker | None] = ContextVar("mcp_providers_upstream_asker", default=None)
"""The forwarded tool call of the current task (``None`` outside :meth:`Relay.forwarding`)."""


def _refused(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


@dataclass(frozen=True, slots=True)
class Bounds:
    """How many questions one forwarded tool call may ask: ``per_call`` in all (0: none), ``open``
    waiting for their answers at once (at least 1). Settings: ``max_questions_per_call``,
    ``max_open_questions_per_call``."""

    per_call: int = 20
    open: int = 4


class Asker:
    """One forwarded ``tools/call`` that its upstream may ask: its ``call``, the ``read_timeout``
    bounds of its requests (paused while asking), what ended it from another task, and how many
    questions it may ask (``limits``; ``who`` names the upstream in a refusal)."""

    def __init__(self, call: ToolCall, who: str = "the upstream", limits: Bounds = Bounds()) -> None:
        self.call = call
        self._who, self._limits = who, limits
        self._asked = 0
        self.ended = False
        self.interrupt: BaseException | None = None
        """What a question raised in another task (a 2026-07-28 round's end): the call raises it."""
        self.bounds: list[anyio.CancelScope] = []
        self._scope: anyio.CancelScope | None = None
        self._asking: set[anyio.CancelScope] = set()
        self._questions = 0
        self._left: list[tuple[anyio.CancelScope, float]] = []

    async def ask(self, question: Callable[[ToolCall], Awaitable[T]]) -> T | types.ErrorData:
        """``await question(call)``, with the request bounds paused; an error answer for the
        upstream when the call has ended (or ends meanwhile), has asked all its ``limits`` let it
        (in all, or at once), or the question fails (its
        :class:`~mcp_providers.errors.ToolFailure` message: no capability, a refusal ...).
        Anything else it raises (the end of an input round) ends the call with it, in the call's task."""
        if self.ended:
            return _refused("the tool call that asked has ended; nobody is waiting for this answer")
        over = self._over_bounds()
        if over is not None:
            return over
        self._asked += 1
        self._pause()
        try:
            with anyio.CancelScope() as scope:
                self._asking.add(scope)
                try:
                    return await question(self.call)
                except Exception as exc:
                    return _refused(f"the downstream client could not be asked: {str(exc)[:300]}")
                except anyio.get_cancelled_exc_class():
                    raise
                except BaseException as exc:  # the end of an input round: the call must end with it
                    self._end_with(exc)
                    return _refused("the question is asked of the downstream client in a new round; this call ends")
                finally:
                    self._asking.discard(scope)
            return _refused("the tool call that asked has ended; nobody is waiting for this answer")
        finally:
            self._resume()

    def _over_bounds(self) -> types.ErrorData | None:
        """The refusal of one question more than :class:`Bounds` lets this call ask, else ``None``."""
        if self._asked >= self._limits.per_call:
            return _refused(
                f"{self._who} asked more than {self._limits.per_call} questions in one tool call; mcp-providers "
                "refuses the rest (max_questions_per_call in its settings)"
            )
        if self._questions >= self._limits.open:
            return _refused(
                f"{self._who} has {self._limits.open} questions of this tool call open already; mcp-providers "
                "refuses more until one is answered (max_open_questions_per_call in its settings)"
            )
        return None

    def _pause(self) -> None:
        """Stop the request bounds' clocks while the first of the questions asked at once waits."""
        self._questions += 1
        if self._questions == 1:
            self._left = [(bound, bound.deadline - anyio.current_time()) for bound in self.bounds]
            for bound, _left in self._left:
                bound.deadline = math.inf

    def _resume(self) -> None:
        """Start them again, with the time each had left, once the last question is answered."""
        self._questions -= 1
        if self._questions == 0:
            for bound, left in self._left:
                bound.deadline = anyio.current_time() + left
            self._left = []

    def _end_with(self, exc: BaseException) -> None:
        if self.interrupt is None:
            self.interrupt = exc
        if self._scope is not None:
            self._scope.cancel()

    async def run(self, forward: Callable[[], Awaitable[T]]) -> T:
        """``await forward()`` as this call; it raises :attr:`interrupt` once a question ended it."""
        token = ASKING.set(self)
        try:
            with anyio.CancelScope() as self._scope:
                try:
                    return await forward()
                except BaseException:
                    if self.interrupt is None:
                        raise
            assert self.interrupt is not None  # only _end_with cancels the scope
            raise self.interrupt
        finally:
            self.ended = True
            for scope in list(self._asking):  # a question still waiting: its answer has nowhere to go
                scope.cancel()
            ASKING.reset(token)


class _Sending:
    __slots__ = ("asker",)

    def __init__(self, asker: Asker | None) -> None:
        self.asker = asker


class _Connection:
    """A downstream connection as a caller's key, equal only to a key of the same live connection
    (by identity). Held weakly when it can be: an ended connection keeps nothing alive, and a new
    one given its ``id`` is another caller."""

    __slots__ = ("_hash", "_of")

    def __init__(self, of: object) -> None:
        self._hash = id(of)
        try:
            self._of: Callable[[], object | None] = weakref.ref(of)
        except TypeError:  # not weakly referable (a bare object(): a key equal to no other)
            self._of = lambda: of

    def __eq__(self, other: object) -> bool:
        mine = self._of()
        return isinstance(other, _Connection) and mine is not None and mine is other._of()

    def __hash__(self) -> int:
        return self._hash


def caller_key(principal: Principal | None, asker: Asker | None) -> Hashable:
    """Who sent a request, as :class:`_Sent` counts callers: a principal an issuer vouched for is
    its whole grant (``share_key``: issuer, subject, client id, scopes, groups, selected claims: the
    same person's other client or narrower token is another caller); one nobody vouched for
    (anonymous HTTP: every client is the one principal ``anonymous``; an empty issuer; none at all)
    is the same caller only over its own downstream connection (a tool call's
    ``channel.connection``), else no other request's."""
    if principal is not None and principal.issuer:
        return principal.share_key
    connection = asker.call.channel.connection if asker is not None else None
    return _Connection(connection if connection is not None else object())


class _Sent:
    """What one upstream session was sent since it was opened: the requests in flight, and who
    sent any request (:func:`caller_key`; at most two kept: only "one caller or more" matters)."""

    __slots__ = ("callers", "live")

    def __init__(self) -> None:
        self.live: list[_Sending] = []
        self.callers: set[Hashable] = set()


def _untied(sent: _Sent | None) -> str | None:
    """Why a question that names no request cannot be given to ``sent``'s one tool call in flight
    (see the module's rule 2), else ``None``."""
    live = [] if sent is None else sent.live
    tail = "ask within one tool call"
    if not live:
        return f"no request of this server is in flight; {tail}"
    askers = {id(s.asker) for s in live}
    if len(askers) > 1:
        return f"{len(live)} requests are in flight on this session, and which one asked cannot be told; {tail}"
    if live[0].asker is None:
        return f"the request in flight is not a tool call, which cannot ask; {tail}"
    assert sent is not None
    if len(sent.callers) > 1:
        return (
            "its questions name no request, and requests of more than one caller were sent on this session "
            "since it was opened (one that ended may still be asking), so which caller asked cannot be told; "
            "its questions are refused until the session is opened again (an upstream over streamable HTTP, "
            "or a 2026-07-28 one, ties each question to its call)"
        )
    return None


class Relay:
    """The elicitation and sampling callbacks of one upstream's clients (every session of it).

    :param who: how messages name the upstream (``upstream 'files' (stdio)``).
    :param bounds: how many questions each forwarded tool call may ask.
    """

    def __init__(self, who: str, bounds: Bounds = Bounds()) -> None:
        self.who, self.bounds = who, bounds
        self._sessions: weakref.WeakKeyDictionary[object, _Sent] = weakref.WeakKeyDictionary()
        """Per upstream session (its ``ClientSession``, until it is gone): what it was sent."""

    def callbacks(self) -> dict[str, Any]:
        """The SDK ``Client``'s keyword arguments (which also announce both capabilities)."""
        return {"elicitation_callback": self.elicitation, "sampling_callback": self.sampling}

    async def forwarding(self, call: ToolCall, forward: Callable[[], Awaitable[T]]) -> T:
        """``await forward()`` (the ``tools/call`` forwarded for ``call``), the upstream's questions
        meanwhile relayed to ``call``.

        :raises BaseException: what ``forward`` raises, or the end of an input round that a
            question asked in another task met.
        """
        return await Asker(call, self.who, self.bounds).run(forward)

    @contextlib.contextmanager
    def sending(self, session: object, bound: anyio.CancelScope, caller: Principal | None = None) -> Iterator[None]:
        """Count one request in flight on ``session`` (weakly referable: the SDK's ``ClientSession``),
        sent for ``caller`` (the current task's tool call's principal, when there is one), with that
        tool call, whose questions pause ``bound``, the request's ``read_timeout``. The caller
        stays on the session's record once the request ends, answered or not."""
        asker = ASKING.get()
        principal = asker.call.principal if asker is not None else caller
        entry = _Sending(asker)
        sent = self._sessions.setdefault(session, _Sent())
        sent.live.append(entry)
        if len(sent.callers) < 2:
            sent.callers.add(caller_key(principal, asker))
        if asker is not None:
            asker.bounds.append(bound)
        try:
            yield
        finally:
            sent.live.remove(entry)
            if asker is not None:
                asker.bounds.remove(bound)

    def _asker(self, session: object, what: str) -> Asker | types.ErrorData:
        """The tool call that asked ``what`` on ``session``, or why it cannot be told."""
        sent = self._sessions.get(session)
        asker = ASKING.get()
        if asker is not None and sent is not None and any(s.asker is asker for s in sent.live):
            return asker  # asked in the call's own task, or on its own response stream
        why = _untied(sent)
        if why is not None:
            return _refused(f"mcp-providers cannot relay {what} from {self.who}: {why}")
        assert sent is not None and sent.live[0].asker is not None
        return sent.live[0].asker

    async def elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The ``elicitation_callback``: a form asked of the downstream user, its answer returned."""
        asker = self._asker(context.session, "elicitation/create")
        if isinstance(asker, types.ErrorData):
            return asker
        if not isinstance(params, types.ElicitRequestFormParams):
            return _refused(f"mcp-providers relays form elicitation only; {self.who} asked in {params.mode!r} mode")
        if params.task is not None:
            return _refused("mcp-providers does not relay task-augmented elicitation; ask without a task")
        answer = await asker.ask(lambda call: call.elicit(params.message, params.requested_schema))
        if isinstance(answer, types.ErrorData):
            return answer
        return elicit_result(answer)

    async def sampling(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """The ``sampling_callback``: the conversation asked of the downstream client's model."""
        asker = self._asker(context.session, "sampling/createMessage")
        if isinstance(asker, types.ErrorData):
            return asker
        prompt = conversation(params)
        if isinstance(prompt, str):
            return _refused(f"mcp-providers cannot relay this sampling request from {self.who}: {prompt}")
        answer = await asker.ask(
            lambda call: call.sample(prompt, max_tokens=params.max_tokens, system_prompt=params.system_prompt)
        )
        if isinstance(answer, types.ErrorData):
            return answer
        return create_message_result(answer)


def elicit_result(answer: Elicited) -> types.ElicitResult:
    """The upstream's ``ElicitResult`` of the downstream's :class:`Elicited` (content only when accepted)."""
    content = dict(answer.content) if answer.action == "accept" else None
    return types.ElicitResult(action=answer.action, content=content)


def create_message_result(answer: Sampled) -> types.CreateMessageResult:
    """The upstream's ``CreateMessageResult`` of the downstream's :class:`Sampled` (a text answer)."""
    text = types.TextContent(type="text", text=answer.text)
    return types.CreateMessageResult(role="assistant", content=text, model=answer.model, stop_reason=answer.stop_reason)


def conversation(params: types.CreateMessageRequestParams) -> list[tuple[Any, str]] | str:
    """``(role, text)`` pairs of the request's messages, as ``ToolCall.sample`` takes them; or why
    they cannot be (tools, non-text content). Advisory fields (model preferences, temperature,
    stop sequences, context inclusion, metadata) are not carried: ``ToolCall.sample`` has no place
    for them, and a client may ignore each."""
    if params.tools or params.tool_choice is not None:
        return "sampling with tools is not relayed"
    if params.task is not None:
        return "task-augmented sampling is not relayed"
    pairs: list[tuple[Any, str]] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if not blocks or not all(isinstance(b, types.TextContent) for b in blocks):
            kinds = sorted({type(b).__name__ for b in blocks if not isinstance(b, types.TextContent)})
            return f"only text messages are relayed, and a {message.role} message holds {', '.join(kinds) or 'nothing'}"
        pairs.append((message.role, "\n".join(b.text for b in blocks if isinstance(b, types.TextContent))))
    return pairs
