"""The copier template behind ``mcp-providers new``, shipped inside the package as data.

``copier.yml`` holds the questions; ``template/`` is rendered into a complete third-party provider
distribution. :func:`path` is where an installed (or editable) mcp-providers keeps it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["path"]


def path() -> Path:
    """The folder holding ``copier.yml`` (pass it to ``copier copy`` as the template source)."""
    return Path(__file__).resolve().parent
