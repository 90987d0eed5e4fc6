"""Test-only plugins for mcp-providers (installed by the test suite, never by users)."""
