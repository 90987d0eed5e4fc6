"""The operator's config file (TOML) and its defaults.

Shape::

    required_plugins = ["mcp-providers-weather>=0.3"]   # serve and check refuse without these distributions
    allow = ["ssg_catalog", "servicenow"]   # only these plugins (default: every installed one)
    deny = ["workflows"]                    # never these
    set = "docs"                            # the plugin set used when --set is not given

    [sets.docs]                             # a named plugin set, chosen with --set docs
    plugins = ["ssg_catalog", "config_templates", "workflows"]
    description = "DocuMCP's documentation resources"

    [server]
    icons = [{ src = "https://example.com/icon-48.png", mime_type = "image/png", sizes = ["48x48"] }]
    page_size = 100              # items per list page
    read_timeout = 30.0          # seconds a provider may take for one read or call
    max_read_bytes = 4194304     # read budget in bytes, overridable per resource
    max_result_bytes = 4194304   # largest tool result in bytes; bigger ones are refused
    side_effects = { servicenow = "warn" }   # per plugin: "enforce" (default) or "warn"
    embedded_side_effects = "scoped"         # mount()/attach(): "scoped" (patch nothing) or "enforce"

    [server.limits]              # requests per subject per window; no table: no limits
    window_seconds = 60
    reads = 600                  # resources/read, prompts/get, completion/complete
    calls = 120                  # tools/call
    lists = 600                  # */list, resources/subscribe, subscriptions/listen
    anonymous = 60               # one bucket shared by every anonymous caller, all methods

    [server.credentials]         # upstream credentials obtained for callers (mcp_providers.credentials)
    margin_seconds = 60          # handed out until this long before they expire
    key_env = "MCP_PROVIDERS_CREDENTIALS_KEY"   # with [cluster]: the deployment key encrypting them in Redis

    [plugins.servicenow]         # validated by that plugin's settings_model()
    ...

No file means every installed plugin with its defaults (the embedded default). The path comes from
``--config`` or the ``MCP_PROVIDERS_CONFIG`` environment variable.

Plugin selection (applied by discovery, each plugin's reason shown by ``mcp-providers plugins``):
the chosen set (``--set`` or ``set``) and ``allow`` each keep only the plugins they name;
``$MCP_PROVIDERS_PLUGINS`` (comma list) replaces both; ``deny`` and ``$MCP_PROVIDERS_DISABLE``
(comma list) always win. The two variables are read by :func:`load_config`, so a
:class:`Config` built in code is not affected by the environment.

The models live in one module per table (:mod:`.server`, :mod:`.auth`, :mod:`.audit`, :mod:`.cluster`),
the whole file and its loading in :mod:`.file`, and the wording of errors in :mod:`.errors`; all are
imported from here.
"""

from mcp_providers.config.audit import (
    SYSLOG_FACILITIES,
    AuditSettings,
    AuditSink,
    FileSinkSettings,
    OtlpLogsSinkSettings,
    SyslogFacility,
    SyslogSinkSettings,
    WebhookSinkSettings,
)
from mcp_providers.config.auth import ASYMMETRIC_ALGORITHMS, AuthConfig, AuthMode, TokenConfig
from mcp_providers.config.cluster import KEY_PREFIX_REQUIRED, ClusterSettings
from mcp_providers.config.environment import CONFIG_ENV, DISABLE_ENV, PLUGINS_ENV
from mcp_providers.config.errors import format_validation_error as format_validation_error
from mcp_providers.config.errors import known_keys as known_keys
from mcp_providers.config.errors import mask as mask
from mcp_providers.config.errors import suggestion as suggestion
from mcp_providers.config.file import Config, PluginSet, load_config
from mcp_providers.config.file import settings_context as settings_context
from mcp_providers.config.server import (
    CREDENTIALS_KEY_ENV,
    AdminSettings,
    CredentialsSettings,
    LimitsSettings,
    ServerSettings,
    TasksSettings,
)

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "CONFIG_ENV",
    "CREDENTIALS_KEY_ENV",
    "DISABLE_ENV",
    "KEY_PREFIX_REQUIRED",
    "PLUGINS_ENV",
    "SYSLOG_FACILITIES",
    "AdminSettings",
    "AuditSettings",
    "AuditSink",
    "AuthConfig",
    "AuthMode",
    "ClusterSettings",
    "Config",
    "CredentialsSettings",
    "FileSinkSettings",
    "LimitsSettings",
    "OtlpLogsSinkSettings",
    "PluginSet",
    "ServerSettings",
    "SyslogFacility",
    "SyslogSinkSettings",
    "TasksSettings",
    "TokenConfig",
    "WebhookSinkSettings",
    "load_config",
]
