"""The Table API emulator over real HTTP on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from mcp_providers.plugins.servicenow.emulator import Emulator, QuerySyntaxError, parse_encoded_query

AUTH = ("admin", "emulator-pw")


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator("dev", users={"admin": "emulator-pw"}, oauth_clients={"cid": "csecret"},
                  api_keys={"key-123": "ci"}, default_limit=100) as emulator:  # fmt: skip
        yield emulator


@pytest.fixture
def http(emu: Emulator) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=emu.base_url, auth=AUTH, trust_env=False) as client:
        yield client


def numbers(response: httpx2.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["number"] for r in response.json()["result"]]


def get(http: httpx2.Client, table: str = "incident", **params: Any) -> httpx2.Response:
    return http.get(f"/api/now/table/{table}", params=params)


def test_query_operators(http, emu):
    incidents = emu.records("incident")
    by = {r["number"]: r for r in incidents}
    assert numbers(get(http, sysparm_query="number=INC0010003")) == ["INC0010003"]
    assert numbers(get(http, sysparm_query="number=INC0010003^ORnumber=INC0010005")) == ["INC0010003", "INC0010005"]
    assert numbers(get(http, sysparm_query="numberININC0010002,INC0010004")) == ["INC0010002", "INC0010004"]
    active = numbers(get(http, sysparm_query="active=true"))
    assert active == [n for n, r in by.items() if r["active"] == "true"]
    assert numbers(get(http, sysparm_query="active!=true")) == [n for n, r in by.items() if r["active"] != "true"]
    assert numbers(get(http, sysparm_query="short_descriptionLIKEvpn")) == ["INC0010002"]  # case-insensitive
    assert numbers(get(http, sysparm_query="short_descriptionSTARTSWITH[dev] Disk")) == ["INC0010005"]
    grouped = numbers(get(http, sysparm_query="number=INC0010001^active=false^NQnumber=INC0010002"))
    assert grouped == ["INC0010002"]  # first group fails (INC0010001 is active), second matches
    assert numbers(get(http, sysparm_query="priority=1^ORDERBYDESCnumber")) == ["INC0010011", "INC0010006",
                                                                                "INC0010001"]  # fmt: skip
    assert numbers(get(http, sysparm_query="priority<=2^ORDERBYpriority^ORDERBYDESCnumber"))[:2] == [
        "INC0010011", "INC0010006"]  # fmt: skip
    assert numbers(get(http, sysparm_query="caller_id.nameSTARTSWITHBeth"))[0] == "INC0010001"
    # an unknown field makes its term invalid, and ServiceNow ignores invalid terms by default
    assert len(numbers(get(http, sysparm_query="no_such_field=1"))) == len(incidents)


def test_double_caret_is_refused_not_split(http):
    response = get(http, sysparm_query="number=INC0010001^^ORactive=true")
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "Invalid query",
            "detail": "'^^' in sysparm_query is not supported: a caret cannot be escaped",
        },
        "status": "failure",
    }
    with pytest.raises(QuerySyntaxError):
        parse_encoded_query("a=1^^b=2")


def test_fields_limit_offset_and_pagination_headers(http, emu):
    first = get(http, "sys_update_xml", sysparm_fields="sys_id,type", sysparm_limit="100")
    assert first.headers["X-Total-Count"] == "257"
    assert len(first.json()["result"]) == 100 and set(first.json()["result"][0]) == {"sys_id", "type"}
    links = first.headers["Link"]
    assert 'rel="first"' in links and 'rel="next"' in links and 'rel="last"' in links and 'rel="prev"' not in links
    assert "sysparm_offset=200" in links.split(",")[-1]
    middle = get(http, "sys_update_xml", sysparm_limit="100", sysparm_offset="100")
    assert 'rel="prev"' in middle.headers["Link"]
    ids = {r["sys_id"] for r in first.json()["result"]} & {r["sys_id"] for r in middle.json()["result"]}
    assert ids == set()
    single = get(http, "problem")
    assert single.headers["X-Total-Count"] == "4" and "Link" not in single.headers
    default = get(http, "sys_update_xml")
    assert len(default.json()["result"]) == 100  # default_limit caps a request with no sysparm_limit
    assert "X-Total-Count" not in get(http, "problem", sysparm_no_count="true").headers
    assert get(http, sysparm_limit="x").status_code == 400


def test_display_values_and_reference_links(http, emu):
    raw = get(http, sysparm_query="number=INC0010001", sysparm_fields="state,caller_id").json()["result"][0]
    assert raw["state"] == "1"
    assert raw["caller_id"]["link"] == f"{emu.base_url}/api/now/table/sys_user/{raw['caller_id']['value']}"
    plain = get(http, sysparm_query="number=INC0010001", sysparm_fields="caller_id",
                sysparm_exclude_reference_link="true").json()["result"][0]  # fmt: skip
    assert plain["caller_id"] == raw["caller_id"]["value"]
    shown = get(http, sysparm_query="number=INC0010001", sysparm_fields="state,priority,caller_id",
                sysparm_display_value="true", sysparm_exclude_reference_link="true").json()["result"][0]  # fmt: skip
    assert shown == {"state": "New", "priority": "1 - Critical", "caller_id": "Beth Anglin (dev)"}
    both = get(http, sysparm_query="number=INC0010001", sysparm_fields="state,caller_id",
               sysparm_display_value="all").json()["result"][0]  # fmt: skip
    assert both["state"] == {"display_value": "New", "value": "1"}
    assert both["caller_id"]["display_value"] == "Beth Anglin (dev)" and "link" in both["caller_id"]
    values = [v for r in get(http).json()["result"] for v in r.values()]
    assert all(isinstance(v, str | dict) for v in values) and not any(isinstance(v, bool | int) for v in values)


def test_record_crud(http, emu):
    created = http.post("/api/now/table/incident", json={"short_description": "Fan noise", "urgency": 2,
                                                           "not_a_field": "ignored"})  # fmt: skip
    assert created.status_code == 201
    record = created.json()["result"]
    assert record["number"] == "INC0010013" and record["urgency"] == "2" and "not_a_field" not in record
    path = f"/api/now/table/incident/{record['sys_id']}"
    patched = http.patch(path, json={"priority": "2", "comments": "first comment"})
    assert patched.status_code == 200 and patched.json()["result"]["priority"] == "2"
    assert patched.json()["result"]["short_description"] == "Fan noise"
    put = http.put(path, json={"impact": "1"})
    assert put.status_code == 200 and put.json()["result"]["priority"] == "2"  # PUT also only sets given fields
    journal = emu.records("sys_journal_field")
    assert [(j["element"], j["value"], j["element_id"]) for j in journal] == [("comments", "first comment",
                                                                              record["sys_id"])]  # fmt: skip
    assert http.get(path).json()["result"]["impact"] == "1"
    assert http.delete(path).status_code == 204
    missing = http.get(path)
    assert missing.status_code == 404
    assert missing.json() == {"error": {"message": "No Record found",
                                        "detail": "Record doesn't exist or ACL restricts the record retrieval"},
                              "status": "failure"}  # fmt: skip
    invalid = http.get("/api/now/table/no_such_table")
    assert invalid.status_code == 400 and invalid.json()["error"]["message"] == "Invalid table no_such_table"
    assert [r.method for r in emu.requests][:3] == ["POST", "PATCH", "PUT"]


def test_auth_schemes_and_request_log(emu):
    url = f"{emu.base_url}/api/now/table/problem"
    assert httpx2.get(url, trust_env=False).status_code == 401
    wrong = httpx2.get(url, auth=("admin", "nope"), trust_env=False)
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "User Not Authenticated"
    assert httpx2.get(url, headers={"x-sn-apikey": "key-123"}, trust_env=False).status_code == 200
    assert httpx2.get(url, headers={"x-sn-apikey": "other"}, trust_env=False).status_code == 401
    token = httpx2.post(f"{emu.base_url}/oauth_token.do", trust_env=False, data={
        "grant_type": "password", "client_id": "cid", "client_secret": "csecret", "username": "admin",
        "password": "emulator-pw"}).json()  # fmt: skip
    assert token["token_type"] == "Bearer" and token["expires_in"] == 1800 and "refresh_token" in token
    bearer = {"Authorization": f"Bearer {token['access_token']}"}
    assert httpx2.get(url, headers=bearer, trust_env=False).status_code == 200
    emu.expire_tokens()
    assert httpx2.get(url, headers=bearer, trust_env=False).status_code == 401
    refreshed = httpx2.post(f"{emu.base_url}/oauth_token.do", trust_env=False, data={
        "grant_type": "refresh_token", "client_id": "cid", "client_secret": "csecret",
        "refresh_token": token["refresh_token"]})  # fmt: skip
    assert refreshed.status_code == 200
    denied = httpx2.post(
        f"{emu.base_url}/oauth_token.do",
        trust_env=False,
        data={"grant_type": "client_credentials", "client_id": "cid", "client_secret": "bad"},
    )
    assert denied.status_code == 401
    seen = [(r.principal, r.authenticated, r.status) for r in emu.requests]
    assert seen == [
        (None, False, 401), ("basic:admin", False, 401), ("apikey:ci", True, 200), ("apikey:unknown", False, 401),
        ("oauth:cid/admin", True, 200), ("oauth:cid/admin", True, 200), ("oauth:cid/admin", False, 401),
        ("oauth:cid/admin", True, 200), ("oauth:cid", False, 401),
    ]  # fmt: skip
    logged = repr(emu.requests)
    assert "emulator-pw" not in logged and "csecret" not in logged and token["access_token"] not in logged


def test_faults_are_consumed_one_request_each(http, emu):
    emu.fail_next(status=429, retry_after="3")
    emu.fail_next(status=None, malformed=True)
    emu.fail_next(status=503)
    limited = get(http, "problem")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "3"
    assert limited.json()["status"] == "failure"
    malformed = get(http, "problem")
    assert malformed.status_code == 200
    with pytest.raises(ValueError):
        malformed.json()
    assert get(http, "problem").status_code == 503
    assert get(http, "problem").status_code == 200
    assert [r.fault for r in emu.requests] == [True, True, True, False]
    emu.fail_next(2, status=401, scope="oauth")
    emu.clear_faults()
    assert get(http, "problem").status_code == 200


def test_instances_have_different_data():
    with Emulator("dev", users={"a": "b"}) as dev, Emulator("prod", users={"a": "b"}) as prod:
        dev_numbers = {r["number"]: r["short_description"] for r in dev.records("incident")}
        prod_numbers = {r["number"]: r["short_description"] for r in prod.records("incident")}
        assert len(dev_numbers) == 12 and len(prod_numbers) == 9
        assert dev_numbers["INC0010001"] != prod_numbers["INC0010001"]
        assert dev.base_url != prod.base_url
        dev_sets = {r["sys_id"] for r in dev.records("sys_update_set")}
        assert dev_sets.isdisjoint({r["sys_id"] for r in prod.records("sys_update_set")})
        assert {r["name"] for r in dev.records("sys_db_object")} >= {"incident", "problem", "change_request"}
