"""What the docs say a task and a ``requestState`` are bound to is what the code binds them to
(tester 30 F7): the caller's whole authorization context (``Principal.share_key``: issuer, subject,
client id, scopes, groups, selected claims), not ``Principal.key`` (issuer and subject) as
docs/protocol-versions.md said, so the same person's other token is "Task not found"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_providers._serve.methods.tasks import reader_of
from mcp_providers._serve.steps.request_state import digest
from mcp_providers.identity import Principal

DOCS = Path(__file__).resolve().parents[1] / "docs"
BROAD = Principal("alice", issuer="https://idp", client_id="app", scopes=frozenset({"a", "b"}))
NARROW = Principal("alice", issuer="https://idp", client_id="app", scopes=frozenset({"a"}))
OTHER_CLIENT = Principal("alice", issuer="https://idp", client_id="cli", scopes=frozenset({"a", "b"}))


def test_the_code_binds_tasks_and_request_state_to_the_whole_authorization_context() -> None:
    assert BROAD.key == NARROW.key == OTHER_CLIENT.key
    assert len({reader_of(p) for p in (BROAD, NARROW, OTHER_CLIENT)}) == 3
    assert len({digest(p.share_key) for p in (BROAD, NARROW, OTHER_CLIENT)}) == 3


@pytest.mark.parametrize("page", ["protocol-versions.md", "security.md"])
def test_no_page_says_a_task_or_request_state_is_bound_to_principal_key(page: str) -> None:
    text = " ".join((DOCS / page).read_text().split())
    for found in re.finditer(re.escape("`Principal.key`"), text):
        before = text[max(0, found.start() - 160) : found.start()]
        if re.search(r"\btask\b|requestState|RequestState", before):
            raise AssertionError(f"{page}: ...{before}`Principal.key`")
