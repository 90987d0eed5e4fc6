"""A plugin that is noisy at import time: a child process, a raw write and a print, all to fd 1.

It provides nothing; the point is that none of these bytes may reach the MCP wire or the
machine-readable output of ``plugins --json``.
"""

from __future__ import annotations

import os
import subprocess
import sys

subprocess.run([sys.executable, "-c", "print('STRAY-FROM-CHILD')"], check=True)
os.write(1, b"STRAY-RAW-WRITE\n")
print("STRAY-PRINT", flush=True)
