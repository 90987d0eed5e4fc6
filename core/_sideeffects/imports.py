"""Patching a module the moment it is first imported (a ``sys.meta_path`` finder), so a library a
read imports late is guarded before its import statement returns. Installed only process-wide.

And the other way round (tester twenty-nine F8): a module's code run again in a scope
(``importlib.reload``, its loader's ``exec_module``, ``runpy`` of its file) re-makes its classes
and functions over the guards they hold (``reload(socket)``: a socket class with no wire guard, for
every later request). The import system runs a module's code through ``exec``, whose audit event
carries the code object: :func:`judge_exec` refuses module code (``<module>``) whose file is a
loaded module's that holds a guard (:func:`holds_a_guard`). A module's first import passes (its
namespace holds nothing yet), and so does another module's reload. Not followed: code compiled
under another file name and run in a guarded module's namespace, and names set by assignment.

A guarded module's ``sys.modules`` entry dropped and the module imported again (tester 32 F9: the
fresh ``socket`` holds no guard, for the whole process) is refused at that import: every import asks
this module's finder first, ``importlib.import_module`` too, which raises no "import" event
(:func:`note_guarded` records the guarded modules at install). Process-wide only: the embedded level
installs no finder. Not followed: a guarded module's code run into a module object of the read's
own that is never put in ``sys.modules`` (``module_from_spec`` + ``exec_module``).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from mcp_providers._sideeffects.saved import is_guard
from mcp_providers._sideeffects.scope import Scope, log, scope_var


def patch_on_import(name: str, patch: Callable[[Any], None], *, optional: bool = True) -> None:
    """Run ``patch`` on module ``name`` now if it is imported, else the moment it first is.

    Importing the HTTP libraries only to patch them cost a start-up a tenth of a second (httpcore2
    brings h11, ssl and, where installed, trio); a read that imports one later still finds it
    guarded, since the patch runs before the import statement returns.

    :param optional: a patch that raises is logged and the module left unpatched; otherwise the
        error propagates (from this call, or from the import that ran the patch).
    """
    module = sys.modules.get(name)
    if module is not None:
        _apply(name, patch, module, optional)
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _PatchingFinder)), None)
    if finder is None:
        finder = _PatchingFinder()
        sys.meta_path.insert(0, finder)
    finder.patches[name] = (patch, optional)


def _apply(name: str, patch: Callable[[Any], None], module: Any, optional: bool) -> None:
    if not optional:
        patch(module)
        return
    try:
        patch(module)
    except Exception:  # a broken optional install must not stop serving
        log.warning("could not guard %s against side effects in reads", name, exc_info=True)


class _PatchingFinder:
    """A ``sys.meta_path`` finder that finds nothing itself: for the modules in ``patches`` it asks
    the finders after it and wraps the loader they found, so the patch runs right after the
    module's own code (the post-import hook of PEP 369, withdrawn, done with PEP 451 specs)."""

    def __init__(self) -> None:
        self.patches: dict[str, tuple[Callable[[Any], None], bool]] = {}
        """Module name -> its patch and whether the patch is optional (see :func:`patch_on_import`)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name in _guarded_names and name not in sys.modules and (scope := scope_var.get()) is not None:
            # asked first by every import, importlib.import_module too (no "import" event)
            attempted = f"importing the guarded module {name!r} afresh after its sys.modules entry was dropped"
            scope.attempt(attempted, "process", event="import")
        patch = self.patches.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, name, *patch)
        return spec


class _PatchingLoader:
    """Loads with ``inner``, then patches; anything else (resource readers, ``get_source``) is the
    inner loader's."""

    def __init__(self, inner: Any, name: str, patch: Callable[[Any], None], optional: bool) -> None:
        self._inner, self._name, self._patch, self._optional = inner, name, patch, optional

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = module.__spec__.loader = self._inner  # as if never wrapped
        # Outside any scope, as when install() imported it: the library's own import-time work
        # (trio, under httpcore2, runs ldconfig) is not the read's, whichever read imports it first.
        token = scope_var.set(None)
        try:
            self._inner.exec_module(module)
            _apply(self._name, self._patch, module, self._optional)
            note_guarded((self._name,))
        finally:
            scope_var.reset(token)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._inner, attribute)


_guarded_names: set[str] = set()
"""Modules seen holding a guard (:func:`note_guarded`): a read dropping one's ``sys.modules`` entry
and importing it again would load it afresh, unguarded, for the whole process (tester 32 F9)."""


def note_guarded(names: Any) -> None:
    """Record which of the modules ``names`` holds a guard now (process-wide install, and each module
    patched on import), so :class:`_PatchingFinder` refuses importing it afresh in a read."""
    _guarded_names.update(n for n in names if (m := sys.modules.get(n)) is not None and holds_a_guard(m))


def holds_a_guard(module: Any) -> bool:
    """Whether ``module``'s namespace holds a guard: under a name of its own, or in a class it
    defines (``socket.socket.sendall``, ``threading.Thread.start``)."""
    for value in list(vars(module).values()):
        if is_guard(value):
            return True
        own_class = isinstance(value, type) and value.__module__ == module.__name__
        if own_class and any(is_guard(v) for v in list(vars(value).values())):
            return True
    return False


def judge_exec(scope: Scope, args: tuple[Any, ...]) -> None:
    """Judge an ``exec`` audit event in ``scope``: a module's code whose file is a loaded module's
    that holds a guard is refused (see the module docstring); any other code passes."""
    code = args[0] if args else None
    if not isinstance(code, types.CodeType) or code.co_name != "<module>":
        return
    for name, module in _modules_of(code.co_filename):
        if holds_a_guard(module):
            attempted = f"running the code of the module {name!r} again (it would replace its guards, process-wide)"
            scope.attempt(attempted, "process", event="exec")
            return


def _modules_of(filename: str) -> list[tuple[str, Any]]:
    """The loaded modules whose code is in ``filename``: their ``__file__``, or, frozen into the
    interpreter (``os``, ``io`` in Python 3.11), ``<frozen NAME>``."""
    frozen = filename[len("<frozen ") : -1] if filename.startswith("<frozen ") and filename.endswith(">") else None
    found = []
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)  # sys.modules may hold any object
        if name == frozen or (isinstance(namespace, dict) and namespace.get("__file__") == filename):
            found.append((name, module))
    return found
