"""Built-in provider plugins, each registered through the ``mcp_providers`` entry-point group."""
