"""A fresh clone of this working tree, for tests that must start where a new contributor starts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fresh_clone(dest: Path) -> Path:
    """Copy into ``dest`` the files a clone of this working tree holds: what git tracks plus new
    files it does not ignore, as they are now (uncommitted edits included). Nothing git ignores
    comes along: no ``.venv``, ``site/``, caches or generated pages.

    :returns: ``dest``.
    :raises subprocess.CalledProcessError: ``git ls-files`` failed (not a git checkout).
    """
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    )
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():  # a tracked file deleted in the work tree is not copied
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest
