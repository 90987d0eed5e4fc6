"""A hookimpl asking for an argument the hookspec does not have."""

from mcp_providers import hookimpl


@hookimpl
def register_resource_providers(settings, database):  # type: ignore[no-untyped-def]
    return []
