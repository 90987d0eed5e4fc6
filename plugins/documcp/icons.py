"""The icon every DocuMCP declaration carries: a page with a folded corner, drawn for this project.

A ``data:`` URI, so the server stays offline-safe and clients fetch nothing.
"""

from __future__ import annotations

from typing import Final

from mcp_providers.models import Icon

SVG: Final = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">'
    '<path d="M6 2h9l5 5v15H6z" fill="#2b6cb0"/><path d="M15 2v5h5z" fill="#90cdf4"/>'
    '<path d="M9 12h8M9 16h8" stroke="#fff" stroke-width="1.5"/></svg>'
)

ICONS: Final = (Icon.from_svg(SVG),)
"""The ``icons`` of every resource, template, tool and prompt the DocuMCP plugins declare."""
