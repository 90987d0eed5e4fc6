"""Configuration templates served under ``documcp://templates/``, stored as package data.

One file per SSG, named ``<ssg id>-config.<ext>``, plus ``diataxis-structure.json``. Double-braced
placeholder names inside double-quoted strings are filled by the ``generate_config`` tool; the
files themselves parse as they are.
"""
