"""Skills at compose time: a :class:`~mcp_providers.skills.SkillProvider` checked and turned into
fixed resources (one per file) plus one :class:`Skill` entry per skill.

What :meth:`SkillFiles.declare` checks, each a ``check`` problem naming the skill (its plugin is
left out, as for any failed check; the other plugins serve):

==========================  =====================================================================
``skill-root``              the root is not an absolute URI without a trailing slash in canonical
                            form, or its last segment is not the frontmatter's ``name``
``skill-files``             a path that is empty, absolute, has ``.``/``..``/empty segments, a
                            backslash, is not in canonical URI form, or is listed twice; or no
                            ``SKILL.md``
``skill-too-large``         more than :data:`~mcp_providers.skills.MAX_FILES` files or
                            :data:`~mcp_providers.skills.MAX_BYTES` bytes
``skill-read-failed``       reading a file raised
``skill-content-changed``   a file read twice gave different bytes
``skill-frontmatter``       ``SKILL.md``'s frontmatter breaks the Agent Skills format
==========================  =====================================================================

Collisions are those of URIs: two skills (or a skill file and any resource) at the same URI in
canonical form are ``duplicate-uri`` in :mod:`~mcp_providers._host.rules`, named on both sides.
The files are served by :meth:`SkillFiles.read`, which refuses bytes that no longer match the
digest the skill's entry published.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from mcp_providers import _threads, policy
from mcp_providers._holders import Frozen
from mcp_providers.errors import Denied, NotFound, ProviderFailed
from mcp_providers.models import Freshness, Icon, Members, Resource
from mcp_providers.providers import Content, ReadRequest, ResourceProvider
from mcp_providers.skills import (
    MAX_BYTES,
    MAX_FILES,
    SkillProvider,
    SkillSource,
    frontmatter_of,
)
from mcp_providers.uris import InvalidUri, canonical

SKILL_FILE = "SKILL.md"
_TEXT_TYPES = ("application/json", "application/yaml", "application/x-yaml", "application/toml")


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class SkillFile(Frozen):
    """One file of a skill, as its entry lists it."""

    __slots__ = ("copies", "digest", "mime_type", "names", "path", "size", "uri")

    uri: str
    """``<root>/<path>``, canonical."""
    path: str
    digest: str
    """``sha256:<64 lowercase hex>`` of the bytes."""
    size: int
    """Bytes."""
    mime_type: str
    copies: tuple[str, ...]
    """The resources whose bytes it serves (:attr:`SkillSource.copies`)."""
    names: tuple[str, ...]
    """Other resources its text names: a ``SKILL.md`` (the skill's manifest) names what every
    other file of its skill copies (tester 27 F7); other files, none. (A skill's own files are not
    among them: a rule on one hides that file, and the skill from ``skills/list``, not its ``SKILL.md``.)"""

    def __init__(
        self,
        uri: str,
        path: str,
        digest: str,
        size: int,
        mime_type: str,
        copies: tuple[str, ...] = (),
        names: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "uri", uri)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "digest", digest)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "mime_type", mime_type)
        object.__setattr__(self, "copies", copies)
        object.__setattr__(self, "names", names)

    @property
    def judged_on(self) -> tuple[str, ...]:
        """The URIs a ``read`` of the file is asked about: its own, those it copies and those it
        names, each once (for a ``SKILL.md``: every resource its skill copies)."""
        return tuple(dict.fromkeys((self.uri, *self.copies, *self.names)))


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Skill(Frozen):
    """One checked skill: what ``skills/list`` and ``skills/get`` answer with."""

    __slots__ = ("files", "frontmatter", "root", "uri")

    uri: str
    """Its ``SKILL.md``'s URI, e.g. ``skill://notes/howto/SKILL.md``."""
    root: str
    """Its folder's URI, e.g. ``skill://notes/howto``."""
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...]
    """Sorted by path."""

    def __init__(self, uri: str, root: str, frontmatter: dict[str, Any], files: tuple[SkillFile, ...]) -> None:
        object.__setattr__(self, "uri", uri)
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "frontmatter", frontmatter)
        object.__setattr__(self, "files", files)

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    def entry(self) -> dict[str, Any]:
        """The wire ``Skill`` object: ``{"uri", "frontmatter", "resources": [{uri, digest, size}]}``."""
        return {
            "uri": self.uri,
            "frontmatter": dict(self.frontmatter),
            "resources": [{"uri": f.uri, "digest": f.digest, "size": f.size} for f in self.files],
        }


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class SkillProblem(Frozen):
    """A skill that cannot be served (the declaration step makes a ``Problem`` of it)."""

    __slots__ = ("fix", "message", "rule", "value")

    rule: str
    value: str
    message: str
    fix: str

    def __init__(self, rule: str, value: str, message: str, fix: str) -> None:
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "fix", fix)


class SkillFiles(ResourceProvider):
    """A :class:`SkillProvider`'s files as fixed resources (same name and prefixes)."""

    def __init__(self, provider: SkillProvider) -> None:
        self.name = provider.name
        self.prefixes = tuple(provider.prefixes)
        self.skill_provider = provider
        self._files: dict[str, tuple[SkillSource, SkillFile]] = {}

    def declare(self) -> tuple[list[Resource], list[Skill], list[SkillProblem]]:
        """Every skill checked (once per composition): the file resources and entries of those
        that pass, a problem for each that does not.

        :raises Exception: whatever ``skills()`` raises (the declaration step reports it).
        """
        resources: list[Resource] = []
        skills: list[Skill] = []
        problems: list[SkillProblem] = []
        for source in self.skill_provider.skills():
            if not isinstance(source, SkillSource):
                raise TypeError(f"skills() gave {type(source).__name__}, expected SkillSource")
            made = self._checked(source)
            if isinstance(made, SkillProblem):
                problems.append(made)
                continue
            skill, files = made
            skills.append(skill)
            resources += files
            self._files.update((f.uri, (source, f)) for f in skill.files)
        return resources, skills, problems

    def _checked(self, source: SkillSource) -> tuple[Skill, list[Resource]] | SkillProblem:
        bad = _root_problem(source.root) or _files_problem(source) or _copies_problem(source)
        if bad is not None:
            return bad
        contents: dict[str, bytes] = {}
        for path in source.files:
            read = self._read_twice(source, path)
            if isinstance(read, SkillProblem):
                return read
            contents[path] = read
        total = sum(map(len, contents.values()))
        if total > MAX_BYTES:
            return SkillProblem(
                "skill-too-large", source.root, f"its files hold {total} bytes, over {MAX_BYTES}", "split the skill"
            )
        try:
            frontmatter = frontmatter_of(contents[SKILL_FILE])
        except (ValueError, UnicodeDecodeError) as exc:
            return SkillProblem("skill-frontmatter", f"{source.root}/{SKILL_FILE}", str(exc), "fix the frontmatter")
        name = frontmatter["name"]
        if source.root.rsplit("/", 1)[-1] != name:
            return SkillProblem(
                "skill-root",
                source.root,
                f"the root's last segment is not the skill's name {name!r}",
                f"serve it at .../{name} or rename the skill",
            )
        files = _files(source, contents)
        skill = Skill(f"{source.root}/{SKILL_FILE}", source.root, frontmatter, files)
        icons = tuple(self.skill_provider.icons)
        return skill, [_resource(f, frontmatter, icons) for f in files]

    def _read_twice(self, source: SkillSource, path: str) -> bytes | SkillProblem:
        where = f"{source.root}/{path}"
        reads = []
        for _ in range(2):
            try:
                data: object = self.skill_provider.read(source, path)  # checked: a provider may return anything
            except Exception as exc:
                return SkillProblem("skill-read-failed", where, f"reading it raised {type(exc).__name__}: {exc}", "")
            if not isinstance(data, bytes):
                return SkillProblem("skill-read-failed", where, f"read gave {type(data).__name__}", "return bytes")
            reads.append(data)
        if reads[0] != reads[1]:
            return SkillProblem(
                "skill-content-changed",
                where,
                "two reads gave different bytes, so no digest can describe it",
                "serve fixed content (a skill's files are published with their digests)",
            )
        return reads[0]

    async def read(self, request: ReadRequest) -> Content:
        """One file's bytes, checked against the digest its skill's entry published.

        :raises ProviderFailed: the bytes changed since the server composed.
        """
        found = self._files.get(request.uri)
        if found is None:  # routed here, so declared: only a reload in between could cause it
            raise NotFound(f"No skill file at {request.uri}", data={"uri": request.uri})
        source, file = found
        for judged in file.judged_on[1:]:  # a copy never serves what a rule on the original refuses
            try:
                policy.require("read", judged, asked_by=file.uri)
            except Denied:  # audited with the original's URI; the caller, who may not see it, is told less
                raise _copy_refused(file.uri) from None
        read = partial(self.skill_provider.read, source, file.path)
        data = await _threads.run_sync(read, f"skill provider {self.skill_provider.name!r} reading {file.uri}")
        if not isinstance(data, bytes) or _digest(data) != file.digest:
            raise ProviderFailed(
                f"skill file {file.uri} no longer has the bytes its skill's entry publishes "
                f"({file.digest}); restart or reload the server to publish the new ones",
                data={"uri": request.requested_uri or file.uri},
            )
        if _is_text(file.mime_type):
            try:
                return Content(text=data.decode("utf-8"), mime_type=file.mime_type)
            except UnicodeDecodeError:
                pass
        return Content(blob=data, mime_type=file.mime_type)


def _root_problem(root: str) -> SkillProblem | None:
    fix = "give the root as scheme://.../<skill name>, e.g. skill://notes/howto"
    try:
        canon = canonical(root)
    except InvalidUri as exc:
        return SkillProblem("skill-root", root, str(exc), fix)
    if "://" not in root or not root.split("://", 1)[1] or root.endswith("/") or canon != root:
        return SkillProblem("skill-root", root, "is not an absolute URI in canonical form without a trailing /", fix)
    return None


def _files_problem(source: SkillSource) -> SkillProblem | None:
    files: tuple[str, ...] = source.files
    given: object = files  # a provider may hand anything; say what is wrong rather than fail later
    if not isinstance(given, tuple) or not all(isinstance(p, str) for p in given):
        return SkillProblem("skill-files", source.root, "files is not a tuple of str", "list the paths as a tuple")
    if len(files) > MAX_FILES:
        return SkillProblem(
            "skill-too-large", source.root, f"it has {len(files)} files, over {MAX_FILES}", "split the skill"
        )
    for path in files:
        why = _path_problem(source.root, path)
        if why is not None:
            return SkillProblem(
                "skill-files", f"{source.root}/{path}", why, "list each path relative to the root, '/'-separated"
            )
    twice = sorted({p for p in files if files.count(p) > 1})
    if twice:
        return SkillProblem("skill-files", source.root, f"{', '.join(twice)} listed twice", "list each path once")
    if SKILL_FILE not in files:
        return SkillProblem("skill-files", source.root, "has no SKILL.md", "add SKILL.md at the skill's root")
    return None


def _copied(source: SkillSource, path: str) -> tuple[str, ...]:
    copied = source.copies.get(path, ())
    return (copied,) if isinstance(copied, str) else tuple(copied)


def _copies_problem(source: SkillSource) -> SkillProblem | None:
    copies: object = source.copies
    fix = "map paths of its files to the URIs of the resources they copy, e.g. {'t.md': 'notes://t'}"
    if not isinstance(copies, Mapping):
        return SkillProblem("skill-files", source.root, "copies is not a mapping of paths to URIs", fix)
    for path in copies:
        if path not in source.files:
            why = f"copies names {path!r}, which is not one of its files"
            return SkillProblem("skill-files", source.root, why, fix)
        uris: object = copies[path]
        listed = (uris,) if isinstance(uris, str) else uris
        if not isinstance(listed, tuple) or not listed or not all(isinstance(u, str) for u in listed):
            return SkillProblem("skill-files", f"{source.root}/{path}", "copies: not a URI or a tuple of URIs", fix)
        for uri in listed:
            if "://" not in uri or _canonical_or_none(uri) != uri:
                why = f"copies: {uri!r} is not an absolute URI in canonical form"
                return SkillProblem("skill-files", f"{source.root}/{path}", why, fix)
    return None


def _canonical_or_none(uri: str) -> str | None:
    try:
        return canonical(uri)
    except InvalidUri:
        return None


def _path_problem(root: str, path: str) -> str | None:
    segments = path.split("/")
    if not path or path.startswith("/") or "" in segments:
        return "the path is empty, absolute or has an empty segment"
    if "\\" in path or any(s in (".", "..") for s in segments):
        return "the path has a backslash or a '.'/'..' segment"
    if any(ord(c) < 0x21 or c in "#?%" for c in path):
        return "the path has a space, control character, '#', '?' or '%' (not a URI path as it stands)"
    uri = f"{root}/{path}"
    try:
        if canonical(uri) != uri:
            return "the path is not in canonical URI form"
    except InvalidUri as exc:
        return str(exc)
    return None


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


_MIME_BY_SUFFIX = {
    ".md": "text/markdown",
    ".json": "application/json",
    ".yml": "application/yaml",
    ".yaml": "application/yaml",
    ".toml": "application/toml",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".cjs": "text/javascript",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
}
"""Registered types for what skills hold most, which the platform's table may lack or name otherwise."""


def _mime(path: str) -> str:
    suffix = path[path.rfind(".") :] if "." in path.rsplit("/", 1)[-1] else ""
    if suffix in _MIME_BY_SUFFIX:
        return _MIME_BY_SUFFIX[suffix]
    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def _is_text(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXT_TYPES


def _file(root: str, path: str, data: bytes, copies: tuple[str, ...]) -> SkillFile:
    return SkillFile(f"{root}/{path}", path, _digest(data), len(data), _mime(path), copies)


def _files(source: SkillSource, contents: Mapping[str, bytes]) -> tuple[SkillFile, ...]:
    """The skill's files, sorted by path; its ``SKILL.md`` names what every other one copies
    (:attr:`SkillFile.names`), so whoever may not read one of those is not served it."""
    files = [_file(source.root, p, contents[p], _copied(source, p)) for p in sorted(source.files)]
    named = tuple(u for f in files if f.path != SKILL_FILE for u in f.copies)
    return tuple(
        SkillFile(f.uri, f.path, f.digest, f.size, f.mime_type, f.copies, named) if f.path == SKILL_FILE else f
        for f in files
    )


def _resource(file: SkillFile, frontmatter: dict[str, Any], icons: tuple[Icon, ...]) -> Resource:
    if file.path == SKILL_FILE:  # the spec: a SKILL.md resource is named and described by its frontmatter
        name, description = str(frontmatter["name"]), str(frontmatter["description"])
    else:
        name, description = file.path[-128:], None
    return Resource(
        uri=file.uri,
        name=name,
        description=description,
        mime_type=file.mime_type,
        size=file.size,
        freshness=Freshness(kind="static"),
        icons=icons,
        # an alias: check names a copy of nothing served; the cache of what a caller may not read stays private
        members=Members(uris=file.copies, filtered=True) if file.copies else None,
    )


# not a dataclass: never compared, shown or read by fields(), and its methods are not made at start-up (issue 43)
class Child(Frozen):
    """One entry of a directory: a skill file, or a folder (``file`` ``None``)."""

    __slots__ = ("file", "name", "uri")

    uri: str
    name: str
    file: Resource | None

    def __init__(self, uri: str, name: str, file: Resource | None) -> None:
        object.__setattr__(self, "uri", uri)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "file", file)


def directories(skills: Iterable[Skill], resource_of: Mapping[str, Resource]) -> dict[str, list[Child]]:
    """Directory URI -> its direct children, sorted by URI, for every folder of every skill
    (each skill's root included): what ``resources/directory/read`` answers from.

    ``{"skill://n/a": [Child("skill://n/a/SKILL.md", ...), Child("skill://n/a/t", "t", None)], ...}``
    """
    out: dict[str, dict[str, Child]] = {}
    for skill in skills:
        for file in skill.files:
            parent = skill.root
            parts = file.path.split("/")
            for part in parts[:-1]:
                here = f"{parent}/{part}"
                out.setdefault(parent, {})[here] = Child(here, part, None)
                parent = here
            out.setdefault(parent, {})[file.uri] = Child(file.uri, parts[-1], resource_of[file.uri])
        out.setdefault(skill.root, {})
    return {d: [children[u] for u in sorted(children)] for d, children in out.items()}


def _copy_refused(uri: str) -> Denied:
    """The refusal of skill file ``uri`` copying or naming a resource the caller may not read,
    naming only ``uri`` (what the caller asked for)."""
    return Denied(
        f"permission-denied: {uri} may not be read by {policy.principal().subject}: it holds what a resource "
        "it may not read serves",
        data={"target": uri, "action": "read", "rule": "permission-denied"},
    )
