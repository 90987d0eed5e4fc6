"""The operator's config file (TOML) and its defaults: :mod:`mcp_providers.config.file`."""

from mcp_providers.config.file import *  # noqa: F403
from mcp_providers.config.file import __all__ as __all__
from mcp_providers.config.file import format_validation_error as format_validation_error
from mcp_providers.config.file import known_keys as known_keys
from mcp_providers.config.file import mask as mask
from mcp_providers.config.file import settings_context as settings_context
from mcp_providers.config.file import suggestion as suggestion
