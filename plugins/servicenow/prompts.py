"""ServiceNow prompts: ``servicenow-incident-brief``, one incident put before the model.

The prompt takes ``instance`` and ``number`` (both complete: configured instance names, then the
instance's active incident numbers) and renders a request for a brief plus the incident's
resource (``servicenow://{instance}/incidents/{number}``) embedded, read as a read of it would be:
on a ``jwt_bearer`` instance with the caller's own ServiceNow user token, so a record the
instance hides from the caller renders as "no incident" and its number is never completed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_providers import policy
from mcp_providers.credentials import Credential, Upstream
from mcp_providers.errors import InvalidParams
from mcp_providers.identity import Principal
from mcp_providers.models import Prompt, PromptArgument
from mcp_providers.plugins.servicenow.icons import ICONS
from mcp_providers.plugins.servicenow.resources import MIME, NUMBER_PREFIX
from mcp_providers.providers import CompletionRequest, Embed, Message, PromptProvider

if TYPE_CHECKING:  # the client, the query checks and the reads come with the first instance (issue 43)
    from mcp_providers.plugins.servicenow.client import InstancePool

__all__ = ["BRIEF", "ServiceNowPrompts"]

BRIEF = "servicenow-incident-brief"


class _Rendering:
    """The current prompt render as a credential source (a render is handed no request object)."""

    @property
    def principal(self) -> Principal:
        return policy.principal()

    async def credential(self, upstream: Upstream) -> Credential:
        return await policy.credential(upstream)

    async def forget_credential(self, upstream: Upstream, stale: Credential | None = None) -> None:
        await policy.forget_credential(upstream, stale)


class ServiceNowPrompts(PromptProvider):
    """The ServiceNow prompts (see the module docstring); none when no instance is configured."""

    name = "servicenow-prompts"

    def __init__(self, pool: InstancePool) -> None:
        self._pool = pool

    def prompts(self) -> Sequence[Prompt]:
        names = tuple(self._pool.names)
        if not names:
            return []
        return [Prompt(
            name=BRIEF, icons=ICONS, title="Brief me on a ServiceNow incident",
            description="Summarise one incident (state, priority, assignment, what happened, next steps); the "
                        "incident's record is embedded as the caller may read it.",
            arguments=(
                PromptArgument(name="instance", description="Configured instance name, e.g. 'dev'.", required=True,
                               completions=names, resource="servicenow://{instance}/info"),
                PromptArgument(name="number", description="Incident number, e.g. INC0010001.", required=True),
            ),
        )]  # fmt: skip

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with self._pool.opened():
            yield

    async def render(self, prompt: Prompt, arguments: Mapping[str, str]) -> Sequence[Message]:
        """The request for a brief, then the incident's resource embedded.

        :raises InvalidParams: ``instance`` is not configured or ``number`` is malformed (nothing sent).
        :raises mcp_providers.errors.NotFound: no such incident, or the instance hides it from the caller.
        :raises mcp_providers.errors.Denied: a ``jwt_bearer`` instance and a caller with no verified principal.
        """
        instance = arguments.get("instance", "")
        if instance not in self._pool.names:
            raise InvalidParams(f"prompt {BRIEF}: unknown instance {instance[:64]!r}; configured instances: "
                                f"{', '.join(self._pool.names)}")  # fmt: skip
        from mcp_providers.plugins.servicenow.query import QueryError, check_number
        from mcp_providers.plugins.servicenow.reads import incident_envelope

        try:
            number = check_number(arguments.get("number", ""))
        except QueryError as exc:
            raise InvalidParams(f"prompt {BRIEF}: {exc}") from None
        text = await incident_envelope(self._pool.client_for(instance, _Rendering()), number)
        uri = f"servicenow://{instance}/incidents/{number}"
        ask = (f"Brief me on incident {number} of the ServiceNow instance {instance}: what happened, its state and "
               f"priority, who has it, and what should happen next. Its record ({uri}) follows.")  # fmt: skip
        return [Message(role="user", text=ask), Message(role="user", content=Embed(uri=uri, text=text, mime_type=MIME))]

    async def complete(self, prompt: Prompt, request: CompletionRequest) -> Sequence[str]:
        """``instance``: configured names; ``number``: up to 20 active incident numbers of the
        instance in the context that the caller's user may read. Typed text that cannot start a
        number gives no values and sends nothing."""
        if request.argument != "number":
            return await super().complete(prompt, request)
        instance = request.context.get("instance", "")
        prefix = request.value.upper()
        if instance not in self._pool.names or not NUMBER_PREFIX.fullmatch(prefix):
            return []
        from mcp_providers.plugins.servicenow.reads import incident_numbers

        return await incident_numbers(self._pool.client_for(instance, request), prefix)
