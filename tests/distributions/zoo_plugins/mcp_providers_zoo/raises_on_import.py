"""Raises while being imported (not a missing dependency: its own code fails)."""

raise RuntimeError("zoo plugin refuses to import: ZOO_IMPORT_FAILURE")
