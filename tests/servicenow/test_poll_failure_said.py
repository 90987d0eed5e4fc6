"""A failed poll says why (tester seventeen): the log line named only ``ServiceNowError``, so an
operator whose password variable was unset saw "polling incident failed: ServiceNowError" and no
cause. A ServiceNowError's message is what a read of that table would answer (masked); any other
exception is still named by its type alone (its text is unknown)."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_providers.plugins.servicenow.errors import ServiceNowError
from mcp_providers.plugins.servicenow.live import Poller

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Failing:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def client(self, instance: str) -> Any:
        async def list_records(*args: Any, **kwargs: Any) -> Any:
            raise self.exc

        return SimpleNamespace(list_records=list_records)


@pytest.mark.parametrize(
    ("exc", "said", "unsaid"),
    [
        (ServiceNowError("environment variable PW is not set (from auth.password_env)", instance="dev"),
         "environment variable PW is not set (from auth.password_env)", None),
        (RuntimeError("a text that may hold anything: s3cret"), "RuntimeError", "s3cret"),
    ],
    ids=["servicenow-error", "other"],
)  # fmt: skip
async def test_a_failed_poll_logs_the_servicenow_errors_message(
    caplog: pytest.LogCaptureFixture, exc: Exception, said: str, unsaid: str | None
) -> None:
    poller = Poller(_Failing(exc), "dev", lambda: None)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="mcp_providers"):
        await poller.round(60)
    lines = [r.getMessage() for r in caplog.records if "polling" in r.getMessage()]
    assert lines and all(f"failed: {said}" in line for line in lines), lines
    assert unsaid is None or unsaid not in caplog.text
