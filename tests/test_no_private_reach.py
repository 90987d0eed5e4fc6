"""No class in the core reads another's private members, and no module imports another's private
names (issue 43): a private name (one leading underscore) is reached only through ``self``/``cls``
(or ``super()``) inside its own module.

Scanned with :mod:`ast` over every module under ``core/`` (the import package ``mcp_providers``):

- an attribute starting with one underscore on anything but ``self``, ``cls`` or ``super()``
  (read, written or deleted), also when spelled ``getattr(x, "_name")`` and the like;
- ``from <one of our modules> import _name`` where ``_name`` is not a module.

Other packages' private names (the MCP SDK's, importlib.metadata's, pydantic's) are the seams
table's business (:mod:`mcp_providers._serve.seams`): that module is not scanned, and a reach
outside it is allowed only when :data:`FOREIGN` lists it and ``SEAMS`` names it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_providers._serve.seams import SEAMS

CORE = Path(__file__).resolve().parents[1] / "core"

SEAMS_MODULE = "_serve/seams.py"
"""The one table of other packages' private names: it reaches them on purpose (see its docstring)."""

NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
"""A named tuple's public methods, which carry an underscore so as not to clash with field names."""

FOREIGN: dict[tuple[str, str], str] = {
    ("_metadata.py", "_path"): "importlib.metadata.PathDistribution._path: the dist-info folder a warning names",
    ("_host/compat.py", "_path"): "importlib.metadata.PathDistribution._path: one core check per folder",
    ("_host/contain.py", "_run"): "asyncio.events.Handle._run: what a scheduled callback raises, contained",
    ("_serve/reload.py", "_path"): "importlib.metadata.PathDistribution._path: the version from the folder name",
    ("_metadata.py", "_plugins"): "pydantic.plugin._loader._plugins: repaired when broken metadata is on sys.path",
    ("_serve/transport/manager.py", "_admit_session"): "the SDK session manager's admission, watched per session",
    ("_serve/state/events.py", "_admit_session"): "the SDK session manager's admission, given one event store each",
    ("_serve/state/events.py", "_event_store"): "the SDK transport's event store, scoped to its session",
}
DOCUMENTED = frozenset({("_serve/lifespans.py", "_exit")})
"""``(module, attribute)`` of names with an underscore that their package documents as public:
``os._exit`` (https://docs.python.org/3/library/os.html#os._exit), ending serve's stuck process."""
"""``(module under core/, attribute)`` -> why another package's private name is reached there;
each must be a seam in ``SEAMS`` (checked at start-up) and must still occur (no stale entries)."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_of(path: Path) -> list[str]:
    parts = ["mcp_providers", *path.relative_to(CORE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported_from(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module ``node`` imports from (relative imports resolved against ``path``)."""
    if node.level == 0:
        return node.module or ""
    package = _module_of(path) if path.name == "__init__.py" else _module_of(path)[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_our_module(dotted: str) -> bool:
    folder = CORE.joinpath(*dotted.split(".")[1:])
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def _on_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _named_by_string(call: ast.Call) -> str | None:
    """The private name ``getattr(x, "_name")`` (or ``setattr``, ``hasattr``, ``delattr``) reaches, if any."""
    if not (isinstance(call.func, ast.Name) and call.func.id in ("getattr", "setattr", "hasattr", "delattr")):
        return None
    if len(call.args) < 2 or _on_self(call.args[0]) or not isinstance(call.args[1], ast.Constant):
        return None
    name = call.args[1].value
    return name if isinstance(name, str) and _private(name) else None


def reaches(path: Path, source: str) -> Iterator[tuple[int, str, str]]:
    """``(line, name, how)`` for each private name ``source`` (the module at ``path``) reaches."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in NAMEDTUPLE_API:
            if not _on_self(node.value):
                yield node.lineno, node.attr, ast.unparse(node)
        elif isinstance(node, ast.Call) and (name := _named_by_string(node)) is not None:
            yield node.lineno, name, ast.unparse(node)
        elif isinstance(node, ast.ImportFrom):
            module = _imported_from(path, node)
            if module.split(".")[0] != "mcp_providers":
                continue
            for alias in node.names:
                if _private(alias.name) and not _is_our_module(f"{module}.{alias.name}"):
                    yield node.lineno, alias.name, f"from {module} import {alias.name}"


def _scan() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        where = path.relative_to(CORE).as_posix()
        if where == SEAMS_MODULE:
            continue
        for line, name, how in reaches(path, path.read_text(encoding="utf-8")):
            found.setdefault((where, name), []).append(f"core/{where}:{line}: {how}")
    return found


def test_no_module_of_the_core_reaches_another_ones_private_names() -> None:
    reached = _scan()
    unexplained = [hit for key, hits in reached.items() if key not in FOREIGN and key not in DOCUMENTED for hit in hits]
    assert unexplained == [], (
        "private names reached from outside their owner; give the owner a public method or property "
        "(or drop the underscore of a helper other modules use):\n" + "\n".join(unexplained)
    )
    stale = sorted(set(FOREIGN) - set(reached))
    assert stale == [], f"FOREIGN entries no longer reached (remove them): {stale}"


@pytest.mark.parametrize("key", sorted(FOREIGN))
def test_each_foreign_private_name_reached_is_a_checked_seam(key: tuple[str, str]) -> None:
    _, name = key
    assert any(f".{name}" in seam.name for seam in SEAMS), f"{name} is not in seams.SEAMS: add a Seam for it"


# The scanner itself: each kind of reach is caught, and what is allowed is not.
CAUGHT = {
    "an attribute of another object": "def f(hub):\n    return hub._local\n",
    "an attribute through an attribute of self": "class A:\n    def f(self):\n        return self.invoker._coalescer\n",
    "an attribute written": "def f(hub):\n    hub._local = set()\n",
    "getattr with a private name": "def f(x):\n    return getattr(x, '_safely')\n",
    "an absolute import": "from mcp_providers._serve.transport.stdio_fds import _claimed\n",
    "a relative import": "from .stdio_fds import _claim_lock\n",
}
ALLOWED = {
    "self": "class A:\n    def f(self):\n        return self._x\n",
    "cls": "class A:\n    @classmethod\n    def f(cls):\n        return cls._x\n",
    "super()": "class A(B):\n    def f(self):\n        return super()._x()\n",
    "a dunder": "def f(x):\n    return x.__name__\n",
    "a named tuple's API": "def f(parts):\n    return parts._replace(path='/')\n",
    "a private module": "from mcp_providers._serve import transport\nfrom mcp_providers import _gc\n",
    "another package's name": "from pydantic.plugin import _loader\n",
}
HERE = CORE / "_serve" / "transport" / "stdio_loop.py"


@pytest.mark.parametrize("source", list(CAUGHT.values()), ids=list(CAUGHT))
def test_the_scan_catches(source: str) -> None:
    assert len(list(reaches(HERE, source))) == 1


@pytest.mark.parametrize("source", list(ALLOWED.values()), ids=list(ALLOWED))
def test_the_scan_allows(source: str) -> None:
    assert list(reaches(HERE, source)) == []
