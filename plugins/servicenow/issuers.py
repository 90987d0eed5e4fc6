"""Whose callers a ``jwt_bearer`` instance may map to ServiceNow users (round 4 item 1).

A ``user_claim`` value (an email, a ``sub``) names a user only within the issuer that vouched for
it (OpenID Connect Core §2, RFC 9068 §2.2): two identity providers may both say
``email = alice@example.test`` for different people, so a config letting two issuers' callers reach
one instance's user directory is refused unless the operator says they share it.
"""

from __future__ import annotations


def issuer_problem(issuers: tuple[str, ...], shared: bool, trusted: tuple[str, ...] | None, claim: str) -> str | None:
    """Why ``issuers`` (with ``issuers_share_users = shared``) cannot name whose callers a
    ``jwt_bearer`` instance maps, given the issuers ``[server.auth]`` trusts (``None``: unknown), else
    ``None``."""
    if len(set(issuers)) != len(issuers):
        return "auth.issuers: name each issuer once"
    if len(issuers) > 1 and not shared:
        return (
            f"auth.issuers names {len(issuers)} issuers, and a {claim!r} value names a user only within the issuer "
            "that vouched for it: one issuer's user could be served as another's ServiceNow user. Name one issuer, "
            "or, if these issuers' users really share one directory, set auth.issuers_share_users = true"
        )
    if trusted:
        stray = [i for i in issuers if i not in trusted]
        if stray:
            named, known = ", ".join(map(repr, stray)), ", ".join(map(repr, trusted))
            return f"auth.issuers: {named} is not trusted by [server.auth] (it trusts {known})"
        if not issuers and len(trusted) > 1:
            return (
                f"[server.auth] trusts {len(trusted)} issuers ({', '.join(map(repr, trusted))}), and a {claim!r} value "
                "names a user only within the issuer that vouched for it: one issuer's user could be served as "
                f"another's ServiceNow user. Set auth.issuers to the issuer whose users this instance maps, e.g. "
                f"issuers = [{trusted[0]!r}] (several only with auth.issuers_share_users = true)"
            )
    return None
