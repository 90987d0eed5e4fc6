"""Fails to import, as a plugin with a missing dependency does."""

import mcp_providers_test_plugins_missing_dependency  # noqa: F401
