"""Test-only broken plugins for mcp-providers (installed by the test suite, never by users)."""
