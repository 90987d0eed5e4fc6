"""Whose callers a service reached as each caller may serve: one rule for every plugin that acts
on a caller's behalf (the ServiceNow ``jwt_bearer`` grant, ``on_behalf_of`` token exchange of the
``upstream`` and ``openapi`` plugins).

A caller's identity (its ``sub``, an ``email`` claim) names a user only within the issuer that
vouched for it (OpenID Connect Core §2, RFC 9068 §2.2): two identity providers may both say
``alice`` for different people. And a token exchange sends the caller's token itself to the
service's authorization server, which, if another issuer's, could replay it here. So a service
acting for callers serves those of the issuers in ``auth.issuers`` only (default: the one issuer
``[server.auth]`` trusts); with several trusted, ``issuers`` must be named, and naming more than one
needs ``issuers_share_users = true``, the operator's word that those issuers' users are one
directory. Settings breaking that are refused (:func:`issuer_problem`); a caller of another issuer
is refused before anything is sent (:meth:`IssuerScope.refusal`).

Example (the ``auth`` table of an upstream, OpenAPI service or ServiceNow instance)::

    issuers = ["https://login.corp.example.com"]
"""

from typing import Self

from pydantic import BaseModel, Field, PrivateAttr, ValidationInfo, model_validator

from mcp_providers.identity import trusted_issuers

__all__ = ["IssuerScope", "issuer_problem"]


def issuer_problem(
    issuers: tuple[str, ...], shared: bool, trusted: tuple[str, ...] | None, *, stakes: str, whose: str
) -> str | None:
    """Why ``issuers`` (with ``issuers_share_users = shared``) cannot name whose callers a service
    serves, given the issuers ``[server.auth]`` trusts (``None``: unknown), else ``None``.

    :param stakes: what goes wrong across issuers, as a clause (``"a 'email' value names a user only
        within the issuer that vouched for it: ..."``).
    :param whose: whose callers ``issuers`` names, ``"whose users this instance maps"``.
    """
    if len(set(issuers)) != len(issuers):
        return "auth.issuers: name each issuer once"
    if len(issuers) > 1 and not shared:
        return (
            f"auth.issuers names {len(issuers)} issuers, and {stakes}. Name one issuer, or, if these issuers' "
            "users really share one directory, set auth.issuers_share_users = true"
        )
    if trusted:
        stray = [i for i in issuers if i not in trusted]
        if stray:
            named, known = ", ".join(map(repr, stray)), ", ".join(map(repr, trusted))
            return f"auth.issuers: {named} is not trusted by [server.auth] (it trusts {known})"
        if not issuers and len(trusted) > 1:
            return (
                f"[server.auth] trusts {len(trusted)} issuers ({', '.join(map(repr, trusted))}), and {stakes}. "
                f"Set auth.issuers to the issuer {whose}, e.g. issuers = [{trusted[0]!r}] (several only with "
                "auth.issuers_share_users = true)"
            )
    return None


class IssuerScope(BaseModel):
    """The ``issuers`` and ``issuers_share_users`` settings of an ``auth`` table acting for each
    caller, checked against ``[server.auth]`` (the validation context's trusted issuers).

    A subclass says what is at stake across issuers (:meth:`issuer_stakes`) for the messages.

    :raises ValueError: (validation) the settings :func:`issuer_problem` refuses.
    """

    issuers: tuple[str, ...] = Field(
        default=(),
        description=(
            "The issuers (``[server.auth] issuer`` values, or ``static``) whose callers this service is reached "
            "for, each as their own user; a caller of any other issuer is refused and nothing is sent. Default: "
            "the one issuer ``[server.auth]`` trusts; required when it trusts several."
        ),
    )
    issuers_share_users: bool = Field(
        default=False,
        description=(
            "Needed to name more than one issuer in ``issuers``: the operator's word that their users share "
            "one directory, so the same user name is the same person whichever issuer vouched."
        ),
    )

    _mapped: tuple[str, ...] = PrivateAttr(default=())

    def issuer_stakes(self) -> tuple[str, str]:
        """``(stakes, whose)`` for :func:`issuer_problem`'s messages; a subclass names its own."""
        return (
            "a user name means a user only within the issuer that vouched for it: one issuer's user could be "
            "served as another's",
            "whose callers this service serves",
        )

    @model_validator(mode="after")
    def _issuers_map_one_user_space(self, info: ValidationInfo) -> Self:
        """Refuse settings that would let two issuers' callers be served as one user."""
        trusted = trusted_issuers(info.context)
        stakes, whose = self.issuer_stakes()
        problem = issuer_problem(self.issuers, self.issuers_share_users, trusted, stakes=stakes, whose=whose)
        if problem:
            raise ValueError(problem)
        known = trusted or ()
        self._mapped = self.issuers or (known if len(known) == 1 else ())
        return self

    @property
    def mapped_issuers(self) -> tuple[str, ...]:
        """The issuers whose callers are served (``()``: not known, e.g. settings built without the
        server's config; then any verified caller is, as an embedder vouches for its callers)."""
        return self._mapped

    def refusal(self, issuer: str | None) -> str | None:
        """Why a caller vouched for by ``issuer`` is refused (a clause: ``"it serves callers of ...
        only (auth.issuers), and this caller's issuer is ..."``; ``None``: anonymous), else ``None``."""
        mapped = self._mapped
        if mapped and issuer not in mapped:
            # A user name means a user only within its issuer: another issuer's "alice" is not ours.
            return (
                f"it serves callers of {', '.join(map(repr, mapped))} only (auth.issuers), and this caller's "
                f"issuer is {issuer!r}"
            )
        return None
