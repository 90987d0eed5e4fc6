"""Asking for input on a 2026-07-28 session: multi-round-trip requests (SEP-2322), by re-running.

2026-07-28 has no server-to-client requests. A tool that asks (``ToolCall.elicit``/``sample``) is
answered instead by ending its ``tools/call`` with an ``InputRequiredResult``: its
``inputRequests`` (``{"input-1": {"method": "elicitation/create", "params": {...}}}``) and a
sealed ``requestState`` (:mod:`~mcp_providers._serve.steps.request_state`). The client answers
and retries the same call with ``inputResponses`` and the state; the tool runs again from the
start, and this time each question it asks is answered from the responses, matched by a key
stable within the call (``input-<n>``: the n-th question of the run) and by what was asked (a
question that changed between runs is asked again). So provider code is the same in both eras;
what it does before its first question runs once per round (ask first, act after).

:class:`RoundsChannel` is the :class:`~mcp_providers.providers.ClientChannel` of such a call;
:func:`until_input` runs the provider and turns the first unanswered question into
:data:`PENDING`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import mcp_types as types
from pydantic import BaseModel, ValidationError

from mcp_providers._host.contain import cancels_this_task
from mcp_providers._serve.methods.channel import SessionChannel, sampled, sampling_messages
from mcp_providers._serve.steps.request_state import Answer, digest
from mcp_providers.errors import InvalidParams
from mcp_providers.providers import Elicited, Sampled

T = TypeVar("T")


class InputNeeded(BaseException):
    """Ends a tool's run at a question not answered yet (2026-07-28 sessions only).

    A ``BaseException``, like cancellation, so a provider's ``except Exception`` does not swallow
    it and go on as if it had been answered; :func:`until_input` catches it around the provider.
    """


PENDING = object()
"""What :func:`until_input` returns when the run stopped at a question."""


async def until_input(channel: RoundsChannel, run: Awaitable[T]) -> T | object:
    """Await the provider's ``run``; :data:`PENDING` if it asked something not answered yet
    (however it ended after asking: a question asked is a question the client must answer).

    :raises BaseException: whatever the run raised without asking, and this task's cancellation.
    """
    try:
        produced = await run
    except BaseException as exc:
        if channel.asked and not cancels_this_task(exc):
            return PENDING
        raise
    return PENDING if channel.asked else produced


class InputChannel(SessionChannel):
    """A channel whose questions are input requests answered by the client later, not
    server-to-client requests: a 2026-07-28 round (:class:`RoundsChannel`) or a task's run
    (:class:`~mcp_providers._serve.methods.tasks.TaskChannel`). They differ only in
    :meth:`_response`, how an answer is had."""

    async def sample(
        self,
        prompt: str | Sequence[tuple[Literal["user", "assistant"], str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
    ) -> Sampled:
        """The answer to a ``sampling/createMessage`` input request.

        :raises ToolFailure: the client did not declare the sampling capability, or its answer is
            not a sampling result.
        """
        self._require(types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling")
        params = types.CreateMessageRequestParams(
            messages=sampling_messages(prompt), max_tokens=max_tokens, system_prompt=system_prompt
        )
        response = await self._response(types.CreateMessageRequest(params=params))
        return sampled(types.CreateMessageResult.model_validate(dict(response)))  # shape checked by checked_answers

    async def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicited:
        """The answer to an ``elicitation/create`` (form mode) input request.

        :raises ToolFailure: the client did not declare the elicitation capability, or its answer
            is not an elicitation result.
        """
        self._require(types.ClientCapabilities(elicitation=types.ElicitationCapability()), "elicitation")
        params = types.ElicitRequestFormParams(message=message, requested_schema=dict(schema))
        response = await self._response(types.ElicitRequest(params=params))
        result = types.ElicitResult.model_validate(dict(response))  # shape checked by checked_answers
        return Elicited(action=result.action, content=dict(result.content or {}))

    async def _response(self, request: types.CreateMessageRequest | types.ElicitRequest) -> Mapping[str, Any]:
        """The client's response to ``request`` (checked to be its method's result)."""
        raise NotImplementedError


class RoundsChannel(InputChannel):
    """The channel of one ``tools/call`` round on a 2026-07-28 session (see the module docstring).

    :param answers: input key -> :class:`~mcp_providers._serve.steps.request_state.Answer`, what
        the verified ``requestState`` and ``inputResponses`` of this round answer.
    """

    def __init__(self, ctx: Any, answers: Mapping[str, Answer]) -> None:
        super().__init__(ctx)
        self._answers = answers
        self._count = 0
        self.asked: dict[str, types.CreateMessageRequest | types.ElicitRequest] = {}
        """Questions of this run not answered yet: input key -> the input request."""
        self.used: dict[str, Answer] = {}
        """Answers this run was given, carried into the next round's state."""

    async def _response(self, request: types.CreateMessageRequest | types.ElicitRequest) -> Mapping[str, Any]:
        """The response to the run's next question; raises :class:`InputNeeded` when unanswered."""
        self._count += 1
        key = f"input-{self._count}"
        answer = self._answers.get(key)
        if answer is not None and answer.ask == digest(wire_request(request)):  # the wire form names the method
            self.used[key] = answer
            return answer.response
        self.asked[key] = request
        raise InputNeeded(key)


def wire_request(request: types.CreateMessageRequest | types.ElicitRequest) -> dict[str, Any]:
    """An input request as it goes in ``inputRequests`` (``{"method", "params"}``, camelCase)."""
    return request.model_dump(by_alias=True, mode="json", exclude_none=True)


_RESULTS: dict[str, tuple[type[BaseModel], str]] = {
    "elicitation/create": (types.ElicitResult, "an elicitation result (action, content)"),
    "sampling/createMessage": (types.CreateMessageResult, "a sampling result (role, content, model)"),
}


def checked_answers(answers: Mapping[str, Answer]) -> Mapping[str, Answer]:
    """``answers``, once each response is known to be the result its method asks for (checked
    before the tool runs, so a bad answer never reaches provider code).

    :raises InvalidParams: a response is not its method's result (``data.key`` names its input key).
    """
    for key, answer in answers.items():
        model, what = _RESULTS.get(answer.method, (None, "a result of a known input request"))
        try:
            if model is None:
                raise ValueError(answer.method)
            model.model_validate(dict(answer.response))
        except (ValidationError, ValueError):
            raise InvalidParams(
                f"inputResponses[{key[:100]!r}] is not {what}; answer the input request of that key as it asks",
                data={"rule": "input-response-shape", "key": key[:100]},
            ) from None
    return answers
