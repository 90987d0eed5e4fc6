"""Benchmarks of mcp-providers against the MCP SDK's ``MCPServer``, FastMCP 4 and the pipe floor.

Run everything, in one process, with ``uv run --group bench python -m benchmarks``; see
``docs/benchmarks.md`` for what each row measures and the latest table.
"""
