"""The encoded-query builder: structured filters in, one safe sysparm_query out."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcp_providers.plugins.servicenow.query import (
    Filter,
    Order,
    QueryError,
    build_query,
    check_number,
    check_sys_id,
    check_table,
    check_value,
)


def test_build_query_joins_filters_and_orders():
    query = build_query(
        [
            Filter(field="active", value="true"),
            Filter(field="priority", operator="<=", value="2"),
            Filter(field="category", operator="IN", value=["network", "software"]),
            Filter(field="assigned_to", operator="ISEMPTY"),
            Filter(field="caller_id.name", operator="LIKE", value="Beth"),
        ],
        [Order(field="priority"), Order(field="sys_created_on", descending=True)],
    )
    assert query == (
        "active=true^priority<=2^categoryINnetwork,software^assigned_toISEMPTY^caller_id.nameLIKEBeth"
        "^ORDERBYpriority^ORDERBYDESCsys_created_on"
    )
    assert build_query() == ""


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("INC0010001^ORactive=true", r"contains '\^': a caret"),
        ("a,b", "contains ',': a comma"),
        ("2026-01-01@2026-02-01", "contains '@': an at-sign"),
        ("x\ny", "control character"),
    ],
)
def test_check_value_refuses_separators_and_says_why(value, named):
    with pytest.raises(QueryError, match=named):
        check_value(value)


def test_filter_refuses_caret_comma_and_at_in_values():
    with pytest.raises(ValidationError, match="caret"):
        Filter(field="number", value="INC0010001^NQactive=true")
    with pytest.raises(ValidationError, match="comma"):
        Filter(field="number", operator="IN", value=["INC0010001", "INC0010002,INC0010003"])
    with pytest.raises(ValidationError, match="at-sign"):
        Filter(field="opened_at", operator=">", value="a@b")


@pytest.mark.parametrize("field", ["active^ORactive", "Priority", "1abc", "a.b.c.d.e", "", "number="])
def test_filter_refuses_malformed_field_names(field):
    with pytest.raises(ValidationError, match="is not a field name"):
        Filter(field=field, value="1")


def test_filter_value_shape_follows_the_operator():
    with pytest.raises(ValidationError, match="takes a non-empty list"):
        Filter(field="state", operator="IN", value="1")
    with pytest.raises(ValidationError, match="takes one string value"):
        Filter(field="state", operator="=", value=["1"])
    with pytest.raises(ValidationError, match="takes no value"):
        Filter(field="state", operator="ISEMPTY", value="1")


def test_build_query_rechecks_values_of_unvalidated_filters():
    sneaky = Filter.model_construct(field="number", operator="=", value="INC0010001^ORactive=true")
    with pytest.raises(QueryError, match="caret"):
        build_query([sneaky])


@pytest.mark.parametrize("number", ["INC0010001", "CHG0030001", "PRB0040001", "RITM000123456789"])
def test_check_number_accepts_record_numbers(number):
    assert check_number(number) == number


@pytest.mark.parametrize("number", ["INC0010001^ORactive=true", "inc0010001", "INC001", "I0010001", "INC0010001 "])
def test_check_number_refuses_anything_else(number):
    with pytest.raises(QueryError, match="expected 2-10 capital letters then 4-12 digits"):
        check_number(number)


def test_check_number_names_the_caret():
    with pytest.raises(QueryError, match="contains a caret"):
        check_number("INC0010001^ORactive=true")


def test_check_sys_id_and_table():
    assert check_sys_id("9d385017c611228701d22104cc95c371") == "9d385017c611228701d22104cc95c371"
    with pytest.raises(QueryError, match="32 lowercase hexadecimal"):
        check_sys_id("9D385017C611228701D22104CC95C371")
    assert check_table("u_custom_table") == "u_custom_table"
    with pytest.raises(QueryError, match="is not a table name"):
        check_table("incident^ORDERBYnumber")
