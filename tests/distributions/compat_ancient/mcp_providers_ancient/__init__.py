"""Must never be imported: its distribution requires a core this one is not."""

raise RuntimeError("mcp_providers_ancient was imported although its distribution requires mcp-providers<0.1")
