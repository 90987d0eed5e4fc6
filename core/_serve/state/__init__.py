"""Shared state behind seams a cluster backend replaces: the bus, leases, coalescing, event store."""
