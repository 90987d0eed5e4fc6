"""private"""
