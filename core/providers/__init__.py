"""Provider base classes: :mod:`mcp_providers.providers.bases`."""

from mcp_providers.providers.bases import *  # noqa: F403
from mcp_providers.providers.bases import __all__ as __all__
