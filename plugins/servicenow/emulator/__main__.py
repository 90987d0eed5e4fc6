"""``python -m mcp_providers.plugins.servicenow.emulator``: see :func:`.demo.main`."""

from mcp_providers.plugins.servicenow.emulator.demo import main

main()
