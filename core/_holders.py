"""Frozen holders written by hand (issue 43).

A ``@dataclass(frozen=True)`` costs about 2 M instructions when its class is made (the ``exec`` of
each generated method), before ``serve``'s first answer. The internal holders no reader compares,
hashes by value, shows or asks ``fields()`` of are plain classes with ``__slots__`` and a written
``__init__`` instead; those that were frozen derive from :class:`Frozen`.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import NoReturn


class Frozen:
    """Base of a holder whose fields are set once, by its ``__init__`` (``object.__setattr__``).

    Assigning or deleting an attribute afterwards raises :class:`dataclasses.FrozenInstanceError`,
    as a frozen dataclass does. Equality and hash are identity's; the repr is ``object``'s.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
