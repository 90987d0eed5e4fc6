"""The emulator as a multi-user instance: the OAuth JWT bearer grant and per-user ACLs (issue 23).

Everything goes over real HTTP (plain ``httpx2``) to an emulator on 127.0.0.1; assertions are
signed with real RSA keys by PyJWT. The hostile-assertion tests emulate what a real instance's
"OAuth JWT API endpoint for external clients" does (sources: ServiceNow docs "JSON Web token
bearer grant" and "Create an OAuth JWT API endpoint for external clients"; the facts are in
``shared/reference/identity.md``):

=======================  ==================================================================
test                     real-instance behaviour emulated
=======================  ==================================================================
wrong key                the signature is checked with the public key of the JWT verifier map
expired                  ``exp`` must be in the future
replayed jti             with the JTI check enabled one assertion buys one token
wrong audience           ``aud`` must be the client id (or the token endpoint, newer releases)
wrong issuer             ``iss`` must be the client id unless another is added to claim validation
unknown / inactive user  ``sub`` must map to an active ``sys_user`` through the user field
bad client secret        the token request carries the endpoint's client id and secret
missing iat              ``iat`` is one of the claims the assertion must include
alg none / HS256         the verifier map holds an RSA public key: only an RS256 signature counts
=======================  ==================================================================

Every refusal is a 401 ``{"error": "access_denied", ...}`` that does not say which check failed;
the tests read the reason from the emulator's request log, so each fails if its own check breaks
(not merely if some other check happens to refuse).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mcp_providers.plugins.servicenow.emulator import Emulator
from mcp_providers.plugins.servicenow.emulator.jwt_bearer import GRANT_TYPE
from mcp_providers.plugins.servicenow.seed import seed_tables

CLIENT_ID = "mcp-jwt-endpoint"
CLIENT_SECRET = "jwt-Cl1ent-S3cret-5d2e"
SERVICE = ("svc.integration", "svc-Pa55-91c0")
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PUBLIC_PEM = KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()  # fmt: skip
DENIED = {"error": "access_denied", "error_description": "access_denied"}


def _emulator(**options: Any) -> Emulator:
    config = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "public_key_pem": PUBLIC_PEM}
    return Emulator("dev", users=dict([SERVICE]), oauth_clients={"svc-client": "svc-secret"},
                    jwt_bearer=config | options.pop("jwt", {}), **options)  # fmt: skip


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with _emulator() as emulator:
        yield emulator


def claims(sub: str | None = "alice@example.test", **overrides: Any) -> dict[str, Any]:
    """A valid assertion's claims; an override of ``None`` leaves that claim out."""
    now = int(time.time())
    base = {"iss": CLIENT_ID, "sub": sub, "aud": CLIENT_ID, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex}
    return {k: v for k, v in (base | overrides).items() if v is not None}


def sign(payload: dict[str, Any], key: rsa.RSAPrivateKey = KEY) -> str:
    return jwt.encode(payload, key, algorithm="RS256")


def grant(emu: Emulator, assertion: str, *, client_id: str = CLIENT_ID, secret: str = CLIENT_SECRET) -> httpx2.Response:
    form = {"grant_type": GRANT_TYPE, "assertion": assertion, "client_id": client_id, "client_secret": secret}
    return httpx2.post(f"{emu.base_url}/oauth_token.do", data=form, trust_env=False)


def user_token(emu: Emulator, sub: str) -> dict[str, str]:
    answer = grant(emu, sign(claims(sub)))
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def refused_because(emu: Emulator, answer: httpx2.Response, reason: str, *, issued_before: int = 0) -> None:
    """The grant was refused the way a real instance refuses it, for ``reason``, and no token was issued."""
    assert answer.status_code == 401 and answer.json() == DENIED
    last = emu.token_requests()[-1]
    assert last.status == 401 and not last.authenticated
    assert last.detail is not None and reason in last.detail, last.detail
    assert len(emu.issued_tokens()) == issued_before


def _unsigned(header: dict[str, Any], payload: dict[str, Any], signature: bytes = b"") -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = part(json.dumps(header).encode()) + "." + part(json.dumps(payload).encode())
    return head + "." + part(signature)


# -- the grant ------------------------------------------------------------------------------------


def test_grant_issues_a_token_for_the_mapped_user(emu):
    assertion = sign(claims())
    answer = grant(emu, assertion)
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 1800 and body["scope"] == "useraccount"
    assert emu.issued_tokens() == [body["access_token"]]
    me = httpx2.get(f"{emu.base_url}/api/now/table/incident", params={"sysparm_fields": "number"},
                    headers={"Authorization": f"Bearer {body['access_token']}"}, trust_env=False)  # fmt: skip
    assert me.status_code == 200
    assert [(r.path, r.principal, r.authenticated) for r in emu.requests] == [
        ("/oauth_token.do", f"jwt:{CLIENT_ID}/alice", True),
        ("/api/now/table/incident", f"jwt:{CLIENT_ID}/alice", True),
    ]  # fmt: skip
    logged = repr(emu.requests)
    assert CLIENT_SECRET not in logged and body["access_token"] not in logged and assertion not in logged


def test_audience_may_be_the_token_endpoint(emu):
    """Newer releases name the token endpoint as ``aud``; the client id is accepted as well."""
    assert grant(emu, sign(claims(aud=f"{emu.base_url}/oauth_token.do"))).status_code == 200


def test_user_field_chooses_how_sub_is_mapped():
    with _emulator(jwt={"user_field": "user_name"}) as emulator:
        assert grant(emulator, sign(claims("bob"))).status_code == 200
        refused_because(
            emulator, grant(emulator, sign(claims("bob@example.test"))), "no sys_user by user_name", issued_before=1
        )


def test_instance_without_a_jwt_endpoint_refuses_the_grant():
    with Emulator("dev", oauth_clients={CLIENT_ID: CLIENT_SECRET}) as plain:
        refused_because(plain, grant(plain, sign(claims())), "no OAuth JWT API endpoint")


def test_jwt_bearer_configuration_is_checked():
    with pytest.raises(ValueError, match="public_key_pem"):
        Emulator("dev", jwt_bearer={"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET})
    with pytest.raises(ValueError, match="RSA public key"):
        Emulator("dev", jwt_bearer={"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                                    "public_key_pem": "not a key"})  # fmt: skip


# -- hostile assertions ---------------------------------------------------------------------------


def test_wrong_key_is_refused(emu):
    """Real instance: the signature is verified with the public key uploaded to the endpoint's JWT
    verifier map; an assertion signed by any other key is refused."""
    refused_because(emu, grant(emu, sign(claims(), OTHER_KEY)), "signature does not verify")


def test_expired_assertion_is_refused(emu):
    """Real instance: ``exp`` must not have passed."""
    now = int(time.time())
    refused_because(emu, grant(emu, sign(claims(iat=now - 600, exp=now - 60))), "expired")


def test_replayed_jti_is_refused(emu):
    """Real instance with "Enable JTI verification": one assertion (``jti``) buys one token; the
    same assertion posted again is refused."""
    assertion = sign(claims())
    assert grant(emu, assertion).status_code == 200
    again = grant(emu, assertion)
    assert again.status_code == 401 and again.json() == DENIED
    assert "jti was already used" in str(emu.token_requests()[-1].detail)
    assert len(emu.issued_tokens()) == 1


def test_missing_jti_is_refused(emu):
    """Real instance with the JTI check enabled: an assertion without ``jti`` cannot be checked for
    replay and is refused."""
    refused_because(emu, grant(emu, sign(claims(jti=None))), "lacks the 'jti' claim")


def test_wrong_audience_is_refused(emu):
    """Real instance: ``aud`` must be the endpoint's client id (or, in newer releases, the token
    endpoint); an assertion minted for another audience is refused."""
    refused_because(emu, grant(emu, sign(claims(aud="https://other.example.com/oauth_token.do"))), "aud is neither")


def test_wrong_issuer_is_refused(emu):
    """Real instance: ``iss`` must match the client id unless the administrator adds another value
    to the endpoint's claim validation (the emulator has none)."""
    refused_because(emu, grant(emu, sign(claims(iss="someone-else"))), "iss is not the client id")


def test_unknown_user_is_refused(emu):
    """Real instance: ``sub`` must name a ``sys_user`` through the endpoint's user field (here
    ``email``); with no such user no token is issued."""
    refused_because(emu, grant(emu, sign(claims("mallory@example.test"))), "no sys_user by email")


def test_inactive_user_is_refused(emu):
    """Real instance: an inactive (locked out) user cannot get a token; ``dan`` is seeded inactive."""
    refused_because(emu, grant(emu, sign(claims("dan@example.test"))), "'dan' is not active")


def test_bad_client_secret_is_refused(emu):
    """Real instance: the token request must carry the endpoint's client id and secret beside a
    valid assertion."""
    refused_because(emu, grant(emu, sign(claims()), secret="guessed"), "client secret is wrong")


def test_other_client_id_is_refused(emu):
    """Real instance: the client id picks the endpoint (and its secret and verifier map); a request
    naming another client id is not this endpoint's, even with this endpoint's secret, and another
    client's own valid credentials do not make the assertion acceptable either."""
    refused_because(emu, grant(emu, sign(claims()), client_id="svc-client", secret=CLIENT_SECRET), "client id")
    refused_because(emu, grant(emu, sign(claims()), client_id="svc-client", secret="svc-secret"), "client id")


def test_missing_exp_is_refused(emu):
    """Real instance: ``exp`` is one of the claims an assertion must include (no endless assertion)."""
    refused_because(emu, grant(emu, sign(claims(exp=None))), "lacks the 'exp' claim")


def test_missing_sub_is_refused(emu):
    """Real instance: without ``sub`` there is no user to map, so no token."""
    refused_because(emu, grant(emu, sign(claims(sub=None))), "lacks the 'sub' claim")


def test_missing_iat_is_refused(emu):
    """Real instance: ``iat`` is one of the claims an assertion must include."""
    refused_because(emu, grant(emu, sign(claims(iat=None))), "lacks the 'iat' claim")


def test_iat_in_the_future_is_refused(emu):
    """Real instance: an assertion issued in the future (beyond clock skew) is not valid yet."""
    refused_because(emu, grant(emu, sign(claims(iat=int(time.time()) + 600))), "not valid yet")


def test_alg_none_is_refused(emu):
    """Real instance: the verifier map holds an RSA public key, so an unsigned assertion
    (``alg: none``) proves nothing and is refused."""
    refused_because(emu, grant(emu, _unsigned({"alg": "none", "typ": "JWT"}, claims())), "alg 'none' is not RS256")


def test_hs256_signed_with_the_public_key_is_refused(emu):
    """Real instance: only an RS256 signature checked with the public key counts; an HMAC whose
    secret is the (public!) key text is the classic algorithm-confusion forgery."""
    header, payload = {"alg": "HS256", "typ": "JWT"}, claims()
    head = _unsigned(header, payload).rsplit(".", 1)[0]
    forged = _unsigned(header, payload, hmac.new(PUBLIC_PEM.encode(), head.encode(), hashlib.sha256).digest())
    refused_because(emu, grant(emu, forged), "alg 'HS256' is not RS256")


def test_garbage_assertion_is_refused(emu):
    refused_because(emu, grant(emu, "not-a-jwt"), "not a JWT")


# -- per-user ACLs over the Table API ------------------------------------------------------------

# dev: incident i is assigned to group i % 3 (Service Desk, Network, Database); alice is in
# Service Desk and Network, bob in Service Desk and Database, carol is admin (see seed.py)
ALICE = ["INC0010001", "INC0010002", "INC0010004", "INC0010005", "INC0010007", "INC0010008", "INC0010010",
         "INC0010011"]  # fmt: skip
BOB = ["INC0010001", "INC0010003", "INC0010004", "INC0010006", "INC0010007", "INC0010009", "INC0010010",
       "INC0010012"]  # fmt: skip
ALL = [f"INC00100{n:02d}" for n in range(1, 13)]


def table(emu: Emulator, headers: dict[str, str] | None, name: str = "incident", **params: Any) -> httpx2.Response:
    auth = None if headers else SERVICE
    return httpx2.get(f"{emu.base_url}/api/now/table/{name}", params=params, headers=headers, auth=auth,
                      trust_env=False)  # fmt: skip


def numbers(answer: httpx2.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [r["number"] for r in answer.json()["result"]]


def sys_id_of(emu: Emulator, number: str) -> str:
    return next(r["sys_id"] for r in emu.records("incident") if r["number"] == number)


def test_two_users_see_the_incidents_of_their_groups_in_lists_counts_and_links(emu):
    alice, bob, carol = (user_token(emu, f"{n}@example.test") for n in ("alice", "bob", "carol"))
    for who, expected in ((alice, ALICE), (bob, BOB), (carol, ALL), (None, ALL)):
        answer = table(emu, who, sysparm_fields="number")
        assert numbers(answer) == expected
        assert answer.headers["X-Total-Count"] == str(len(expected))
    # the rule filters the query itself: pages are full and the Link header counts readable rows only
    page = table(emu, alice, sysparm_fields="number", sysparm_limit="3", sysparm_offset="3")
    assert numbers(page) == ALICE[3:6] and page.headers["X-Total-Count"] == "8"
    last = page.headers["Link"].split(",")[-1]
    assert 'rel="last"' in last and "sysparm_offset=6" in last
    assert "sysparm_offset=9" in table(emu, None, sysparm_limit="3").headers["Link"].split(",")[-1]
    active = table(emu, bob, sysparm_query="active=true^ORDERBYDESCnumber", sysparm_fields="number")
    assert numbers(active) == ["INC0010010", "INC0010009", "INC0010007", "INC0010004", "INC0010003", "INC0010001"]


def test_number_queries_and_reads_by_sys_id_hide_other_groups_incidents(emu):
    alice, bob = user_token(emu, "alice@example.test"), user_token(emu, "bob@example.test")
    hidden = table(emu, alice, sysparm_query="number=INC0010003")
    assert numbers(hidden) == [] and hidden.headers["X-Total-Count"] == "0"
    assert numbers(table(emu, alice, sysparm_query="numberININC0010002,INC0010003")) == ["INC0010002"]
    assert numbers(table(emu, bob, sysparm_query="number=INC0010003")) == ["INC0010003"]
    url = f"{emu.base_url}/api/now/table/incident/{sys_id_of(emu, 'INC0010003')}"
    refused = httpx2.get(url, headers=alice, trust_env=False)
    missing = httpx2.get(f"{emu.base_url}/api/now/table/incident/{'0' * 32}", headers=alice, trust_env=False)
    assert refused.status_code == missing.status_code == 404 and refused.json() == missing.json()
    assert httpx2.get(url, headers=bob, trust_env=False).json()["result"]["number"] == "INC0010003"


def test_aggregates_count_only_readable_incidents(emu):
    alice = user_token(emu, "alice@example.test")
    stats = f"{emu.base_url}/api/now/stats/incident"

    def count(headers: dict[str, str] | None, **params: str) -> Any:
        answer = httpx2.get(stats, params={"sysparm_count": "true", **params}, headers=headers,
                            auth=None if headers else SERVICE, trust_env=False)  # fmt: skip
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    assert count(alice) == {"stats": {"count": "8"}}
    assert count(None) == {"stats": {"count": "12"}}
    assert count(alice, sysparm_query="number=INC0010003") == {"stats": {"count": "0"}}
    grouped = count(alice, sysparm_group_by="assignment_group", sysparm_display_value="true")
    assert sorted((g["groupby_fields"][0]["value"], g["stats"]["count"]) for g in grouped) == [
        ("Network (dev)", "4"), ("Service Desk (dev)", "4")]  # fmt: skip
    assert len(count(None, sysparm_group_by="assignment_group")) == 3
    assert httpx2.get(stats, headers={"Authorization": "Bearer nope"}, trust_env=False).status_code == 401
    unknown = httpx2.get(f"{emu.base_url}/api/now/stats/no_such_table", headers=alice, trust_env=False)
    assert unknown.status_code == 400 and unknown.json()["error"]["message"] == "Invalid table no_such_table"
    caret = httpx2.get(stats, params={"sysparm_query": "a=1^^b=2"}, headers=alice, trust_env=False)
    assert caret.status_code == 400 and caret.json()["error"]["message"] == "Invalid query"


def test_display_values_and_dot_walks_do_not_reach_a_hidden_record():
    tables = seed_tables("dev")
    tables["incident"][0]["parent_incident"] = tables["incident"][2]["sys_id"]  # INC0010001 -> INC0010003
    with _emulator(tables=tables) as emu:
        alice, bob = user_token(emu, "alice@example.test"), user_token(emu, "bob@example.test")
        fields = {"sysparm_query": "number=INC0010001", "sysparm_fields": "number,parent_incident,"
                  "parent_incident.short_description", "sysparm_display_value": "all"}  # fmt: skip
        seen = table(emu, bob, **fields).json()["result"][0]
        assert seen["parent_incident"]["display_value"] == "INC0010003"
        assert seen["parent_incident.short_description"]["value"] == "[dev] Printer offline on floor 3"
        blind = table(emu, alice, **fields).json()["result"][0]
        assert blind["parent_incident"]["display_value"] == "" and blind["parent_incident.short_description"] == {
            "display_value": "", "value": ""}  # fmt: skip
        walk = "parent_incident.short_descriptionLIKEprinter"
        assert numbers(table(emu, bob, sysparm_query=walk)) == ["INC0010001"]
        assert numbers(table(emu, alice, sysparm_query=walk)) == []


def test_journal_entries_are_readable_only_with_their_incident(emu):
    path = f"{emu.base_url}/api/now/table/incident/{sys_id_of(emu, 'INC0010003')}"
    noted = httpx2.patch(path, json={"work_notes": "db01 disk swapped"}, auth=SERVICE, trust_env=False)
    assert noted.status_code == 200
    alice, bob = user_token(emu, "alice@example.test"), user_token(emu, "bob@example.test")
    for who, expected in ((bob, ["db01 disk swapped"]), (alice, []), (None, ["db01 disk swapped"])):
        answer = table(emu, who, "sys_journal_field", sysparm_fields="value")
        assert [r["value"] for r in answer.json()["result"]] == expected
        assert answer.headers["X-Total-Count"] == str(len(expected))


def test_journal_entries_of_a_deleted_incident_are_not_readable_by_users(emu):
    path = f"{emu.base_url}/api/now/table/incident/{sys_id_of(emu, 'INC0010001')}"
    assert httpx2.patch(path, json={"comments": "c"}, auth=SERVICE, trust_env=False).status_code == 200
    assert httpx2.delete(path, auth=SERVICE, trust_env=False).status_code == 204
    alice = user_token(emu, "alice@example.test")
    assert table(emu, alice, "sys_journal_field").json()["result"] == []
    assert len(table(emu, None, "sys_journal_field").json()["result"]) == 1


def test_group_membership_is_read_at_each_request(emu):
    bob = user_token(emu, "bob@example.test")
    assert "INC0010002" not in numbers(table(emu, bob, sysparm_fields="number"))
    users = {r["user_name"]: r["sys_id"] for r in emu.records("sys_user")}
    network = next(g["sys_id"] for g in emu.records("sys_user_group") if g["name"].startswith("Network"))
    joined = httpx2.post(f"{emu.base_url}/api/now/table/sys_user_grmember", auth=SERVICE, trust_env=False,
                         json={"user": users["bob"], "group": network})  # fmt: skip
    assert joined.status_code == 201
    assert numbers(table(emu, bob, sysparm_fields="number")) == ALL


# -- writes stamped with the acting user ---------------------------------------------------------


def test_a_user_write_stamps_the_user_on_the_record_and_the_journal(emu):
    alice = user_token(emu, "alice@example.test")
    path = f"{emu.base_url}/api/now/table/incident/{sys_id_of(emu, 'INC0010002')}"
    before = next(r for r in emu.records("incident") if r["number"] == "INC0010002")
    changed = httpx2.patch(path, headers=alice, trust_env=False, json={
        "priority": "2", "work_notes": "Rebooted the VPN concentrator", "comments": "Looking into it",
        "sys_updated_by": "bob", "sys_created_by": "bob"})  # fmt: skip
    assert changed.status_code == 200
    record = next(r for r in emu.records("incident") if r["number"] == "INC0010002")
    assert record["priority"] == "2" and record["sys_updated_by"] == "alice"
    assert record["sys_created_by"] == before["sys_created_by"] == "admin"  # not writable, not a user's
    assert record["sys_created_on"] == before["sys_created_on"]
    journal = [(j["element"], j["value"], j["sys_created_by"]) for j in emu.records("sys_journal_field")]
    assert journal == [("work_notes", "Rebooted the VPN concentrator", "alice"),
                       ("comments", "Looking into it", "alice")]  # fmt: skip
    assert changed.json()["result"]["sys_updated_by"] == "alice"
    created = httpx2.post(f"{emu.base_url}/api/now/table/incident", headers=alice, trust_env=False,
                          json={"short_description": "Fan noise", "comments": "seen twice"})  # fmt: skip
    assert created.status_code == 201
    new = created.json()["result"]
    assert (new["sys_created_by"], new["sys_updated_by"]) == ("alice", "alice")
    assert emu.records("sys_journal_field")[-1]["sys_created_by"] == "alice"


def test_a_user_cannot_change_or_delete_an_incident_it_cannot_read(emu):
    alice = user_token(emu, "alice@example.test")
    path = f"{emu.base_url}/api/now/table/incident/{sys_id_of(emu, 'INC0010003')}"
    before = emu.records("incident")
    assert httpx2.patch(path, headers=alice, json={"priority": "1", "work_notes": "x"},
                        trust_env=False).status_code == 404  # fmt: skip
    assert httpx2.delete(path, headers=alice, trust_env=False).status_code == 404
    assert emu.records("incident") == before and emu.records("sys_journal_field") == []


def test_service_account_writes_are_not_stamped_as_today(emu):
    path = f"{emu.base_url}/api/now/table/incident/{sys_id_of(emu, 'INC0010002')}"
    answer = httpx2.patch(path, auth=SERVICE, trust_env=False, json={"work_notes": "n", "sys_updated_by": "mallory"})
    assert answer.status_code == 200
    record = next(r for r in emu.records("incident") if r["number"] == "INC0010002")
    assert record["sys_updated_by"] == "admin"
    assert emu.records("sys_journal_field")[-1]["sys_created_by"] == "basic:svc.integration"


# -- user tokens that stop working ---------------------------------------------------------------


def test_revoked_and_expired_user_tokens_are_refused(emu):
    alice, bob = user_token(emu, "alice@example.test"), user_token(emu, "bob@example.test")
    assert emu.revoke_user_tokens("alice") == 1
    refused = table(emu, alice)
    assert refused.status_code == 401 and refused.json()["error"]["message"] == "User Not Authenticated"
    assert table(emu, bob).status_code == 200
    assert table(emu, user_token(emu, "alice@example.test")).status_code == 200  # a new grant works
    emu.expire_tokens()
    assert table(emu, bob).status_code == 401
    assert emu.requests[-1].principal == f"jwt:{CLIENT_ID}/bob" and not emu.requests[-1].authenticated


def test_a_user_deactivated_after_the_grant_is_refused(emu):
    alice = user_token(emu, "alice@example.test")
    users = {r["user_name"]: r["sys_id"] for r in emu.records("sys_user")}
    locked = httpx2.patch(f"{emu.base_url}/api/now/table/sys_user/{users['alice']}", json={"active": "false"},
                          auth=SERVICE, trust_env=False)  # fmt: skip
    assert locked.status_code == 200
    assert table(emu, alice).status_code == 401
    refused_because(emu, grant(emu, sign(claims())), "'alice' is not active", issued_before=1)
