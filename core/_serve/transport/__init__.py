"""Transports: stdio, streamable HTTP (with bearer auth, client limits and the ops routes)."""
