"""Compatibility between the running core and installed plugin distributions.

Two checks, both read from installed metadata only, so neither imports a plugin:

- :func:`core_requirement_problem`: a plugin's distribution declares which cores it works with in
  its ``Requires-Dist`` on ``mcp-providers`` (``dependencies = ["mcp-providers>=0.1,<0.3"]`` in
  its pyproject). Discovery asks this before importing any of its entry points; a core outside the
  range rejects the plugin unimported.
- :func:`unmet_requirements`: the operator's top-level ``required_plugins`` (PEP 508 strings
  naming plugin *distributions*, as pytest's ``required_plugins`` does), each of which must be
  installed, declare an entry point in the ``mcp_providers`` group, and have a version in range.

Versions compare by PEP 440 (``packaging``) with pre-releases allowed, as pytest's
``required_plugins`` compares: an installed core ``0.2.0rc1`` satisfies ``>=0.1`` but not
``>=0.2``. A ``Requires-Dist`` whose marker is false here does not apply; one behind an
``extra == "..."`` marker applies only when that extra is asked for, which installed metadata does
not record, so it is not applied.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import pathlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mcp_providers import hookspecs

if TYPE_CHECKING:  # packaging is imported when a requirement is read (start-up usually reads none)
    from packaging.requirements import Requirement
    from packaging.version import Version

CORE = "mcp-providers"
"""The core's distribution name, as plugins write it in ``Requires-Dist``."""

_LEADING_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_CORE_SPELLED = r"mcp[-_.]+providers"  # every spelling that canonicalizes to mcp-providers (PEP 503)
_REQUIRES_CORE = re.compile(rf"^Requires-Dist:[ \t]*(?:\r?\n[ \t]+)?{_CORE_SPELLED}", re.IGNORECASE | re.MULTILINE)
"""A ``Requires-Dist`` header (folded or not) whose value starts with the core's name, or a longer one."""


@functools.cache
def core_version() -> Version | None:
    """The running core's version from its installed metadata, or ``None`` when it is not installed
    (a bare source tree on ``sys.path``): then no plugin is checked against it."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(importlib.metadata.version(CORE))
    except (importlib.metadata.PackageNotFoundError, InvalidVersion):
        return None


def _applies(requirement: Requirement) -> bool:
    # extra="" : an extra-only requirement is not applied (see the module docstring).
    return requirement.marker is None or requirement.marker.evaluate({"extra": ""})


def may_require_core(dist: importlib.metadata.Distribution) -> bool:
    """Whether ``dist``'s metadata could hold a ``Requires-Dist`` on the core: ``False`` only when
    no ``Requires-Dist`` header of its ``METADATA`` (``PKG-INFO`` in an ``.egg-info``, where
    ``importlib.metadata`` reads it) starts with the core's name and no ``requires.txt`` spells it
    (so no line of ``dist.requires`` can name it). Read as text, without parsing the metadata as a
    message (about 1 ms each, for every installed plugin distribution)."""
    metadata = _read_text(dist, "METADATA") or _read_text(dist, "PKG-INFO")
    if metadata is None:  # no metadata file at all: let dist.requires decide
        return True
    if _REQUIRES_CORE.search(metadata):
        return True
    egg_requires = _read_text(dist, "requires.txt")  # what dist.requires reads when METADATA lists none
    return egg_requires is not None and re.search(_CORE_SPELLED, egg_requires, re.IGNORECASE) is not None


_NOT_THERE = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
"""What ``PathDistribution.read_text`` takes for a file that is not there (its ``KeyError`` is a zip's)."""


def _read_text(dist: importlib.metadata.Distribution, name: str) -> str | None:
    """``dist.read_text(name)``: for a distribution in a folder on disk, the same ``open`` that
    ``pathlib.Path.read_text`` makes, without making a path object (a third of the cost of a
    missing ``requires.txt``, issue 43); any other distribution (a zip, a finder's own) reads its way."""
    where = getattr(dist, "_path", None)
    if type(dist) is not importlib.metadata.PathDistribution or not isinstance(where, pathlib.Path):
        return dist.read_text(name)
    try:
        with open(os.path.join(where, name), encoding="utf-8") as file:
            return file.read()
    except _NOT_THERE:
        return None


def plugin_core_problem(dist: importlib.metadata.Distribution) -> str | None:
    """:func:`core_requirement_problem` against the running core (:func:`core_version`), answered
    once per distribution folder (the built-in plugins are six entry points of one distribution);
    a distribution whose metadata never names the core (:func:`may_require_core`) fits any core,
    so neither its ``METADATA`` nor the core's version is parsed for it."""
    where = getattr(dist, "_path", None)  # a dist-info folder, when on disk
    if where is None:
        return _core_problem(dist)
    key = str(where)
    if key not in _answers:
        _answers[key] = _core_problem(dist)
    return _answers[key]


_answers: dict[str, str | None] = {}
""":func:`plugin_core_problem`'s answers by dist-info folder (the running core never changes)."""


def forget() -> None:
    """Drop :func:`plugin_core_problem`'s answers (a reload: a folder's metadata may have been rewritten)."""
    _answers.clear()


def _core_problem(dist: importlib.metadata.Distribution) -> str | None:
    if not may_require_core(dist):
        return None
    return core_requirement_problem(dist, core_version())


def core_requirement_problem(dist: importlib.metadata.Distribution, core: Version | None) -> str | None:
    """Why ``dist`` does not fit the core at version ``core``, or ``None`` when it does.

    :param dist: the plugin's installed distribution (its ``Requires-Dist`` lines are read).
    :param core: the running core's version (:func:`core_version`); ``None`` checks nothing.
    :returns: one line naming the distribution, its version, its requirement and the core's
        version, e.g. ``mcp-providers-weather 0.3 requires mcp-providers<0.1; this core is 0.1.0``.
    """
    return None if core is None else _problem(dist, core)


def _problem(dist: importlib.metadata.Distribution, core: Version) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    for line in dist.requires or ():
        head = _LEADING_NAME.match(line)
        if head is None or canonicalize_name(head.group(1)) != CORE:
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            return f"{dist.name} {dist.version} has a Requires-Dist on {CORE} that does not parse ({line!r}: {exc})"
        if _applies(requirement) and not requirement.specifier.contains(core, prereleases=True):
            return (
                f"{dist.name} {dist.version} requires {CORE}{requirement.specifier}; this core is {core} "
                f"(install a release of {dist.name} made for {CORE} {core}, or a core it supports)"
            )
    return None


def _version_in(version: str, requirement: Requirement) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return requirement.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:  # not PEP 440: no range can hold it
        return False


def plugin_distributions() -> dict[str, importlib.metadata.Distribution]:
    """Installed distributions declaring an entry point in the ``mcp_providers`` or
    ``mcp_providers.policy`` group, by canonical
    name (the first found on ``sys.path`` for each, as ``importlib.metadata`` picks)."""
    from packaging.utils import canonicalize_name

    found: dict[str, importlib.metadata.Distribution] = {}
    for ep in (
        e for group in (hookspecs.PROJECT, hookspecs.POLICY_GROUP) for e in importlib.metadata.entry_points(group=group)
    ):
        dist = ep.dist
        if dist is not None:
            found.setdefault(canonicalize_name(dist.name), dist)
    return found


def unmet_requirements(required: Iterable[str], installed: dict[str, importlib.metadata.Distribution]) -> list[str]:
    """One line per ``required_plugins`` entry not met by the ``installed`` plugin distributions.

    :param required: PEP 508 strings (validated by the config), e.g. ``"mcp-providers-weather>=0.3"``.
    :param installed: :func:`plugin_distributions`.
    :returns: e.g. ``required_plugins: mcp-providers-weather>=0.3 is not met: 0.2 is installed``.
    """
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lines = []
    for text in required:
        requirement = Requirement(text)
        if not _applies(requirement):
            continue
        dist = installed.get(canonicalize_name(requirement.name))
        if dist is None:
            names = ", ".join(f"{d.name} {d.version}" for _, d in sorted(installed.items())) or "none"
            lines.append(
                f"required_plugins: {text} is not met: {requirement.name} is not installed "
                f"(installed plugin distributions: {names})"
            )
        elif not _version_in(dist.version, requirement):
            lines.append(
                f"required_plugins: {text} is not met: {dist.name} {dist.version} is installed; "
                f"install a version matching {requirement.specifier}"
            )
    return lines
