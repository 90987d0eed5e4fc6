"""``python -m mcp_providers``: the same CLI as the ``mcp-providers`` command."""

from mcp_providers.cli import main

main()
