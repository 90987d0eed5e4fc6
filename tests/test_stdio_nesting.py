"""How deep a line nests, as the stdio framing measures it before parsing: over the limit exactly
when the JSON value is (strings holding brackets, quotes and backslashes included), and linear in
the line's length for input that is not JSON at all."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_providers._serve.transport.nesting import MAX_NESTING
from mcp_providers._serve.transport.nesting import nesting as _nesting

TRICKY = st.text(alphabet='[]{}"\\ab\n', max_size=12) | st.text(max_size=6)
VALUES = st.recursive(
    TRICKY | st.integers() | st.booleans() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    """How many arrays and objects enclose the deepest part (0 for a scalar)."""
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def wrapped(value: Any, layers: int) -> Any:
    for i in range(layers):
        value = [value] if i % 2 else {'k[\\"': value}
    return value


@given(VALUES, st.integers(min_value=0, max_value=160), st.booleans())
def test_a_line_is_too_deep_exactly_when_its_value_nests_past_the_limit(value: Any, layers: int, ascii: bool) -> None:
    deep = wrapped(value, layers)
    line = json.dumps(deep, ensure_ascii=ascii).encode()
    assert (_nesting(line) > MAX_NESTING) == (depth(deep) > MAX_NESTING), (line[:200], depth(deep))


def test_unterminated_escaped_quotes_are_measured_in_one_pass() -> None:
    # Quadratic scanning made this take hours (a rescan from every quote); bound the count of
    # characters the measurement can touch instead of timing it: the depth is still right.
    assert _nesting(b'"\\' * 1_000_000) == 1
    assert _nesting(b"[" * 200 + b'"\\' * 1_000_000) > MAX_NESTING  # counting stops past the limit
