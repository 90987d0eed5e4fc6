"""``python -m mcp_providers``: the same CLI as the ``mcp-providers`` command."""

from mcp_providers._launch import main

main()
