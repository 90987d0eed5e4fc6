"""The icon every ServiceNow declaration carries: a ticket, drawn for this project.

A ``data:`` URI, so the server stays offline-safe and clients fetch nothing.
"""

from __future__ import annotations

from typing import Final

from mcp_providers.models import Icon

SVG: Final = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">'
    '<path d="M2 6h20v4a2 2 0 0 0 0 4v4H2v-4a2 2 0 0 0 0-4z" fill="#2f855a"/>'
    '<path d="M8 9h8M8 12h8M8 15h5" stroke="#fff" stroke-width="1.5"/></svg>'
)

ICONS: Final = (Icon.from_svg(SVG),)
"""The ``icons`` of every resource, template, tool and prompt the ServiceNow plugin declares."""
