"""A hook that raises."""

from mcp_providers import hookimpl


@hookimpl
def register_resource_providers(settings):  # type: ignore[no-untyped-def]
    raise RuntimeError("the backend is not configured")
