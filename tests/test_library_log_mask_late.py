"""The library log mask covers loggers made after it was put in place (a module the library imports
lazily, ``httpcore2.http2``, ``mcp.client.auth.oauth2``), and leaves nothing behind: the records of
other loggers are untouched, and once the last secret-holding plugin leaves no record is changed
and the process's record factory is the one it had (unless the host chained its own on top)."""

from __future__ import annotations

import io
import logging
import timeit
import uuid
from collections.abc import Iterator

import pytest

from mcp_providers.plugins._library_logs import LIBRARY_LOGGERS, library_logs_masked
from mcp_providers.plugins._masking import MASK, Secrets

KEY = "Zq8-secret-KEY-77"
BEARER = "Bearer abc.def.ghi"


@pytest.fixture
def seen() -> Iterator[io.StringIO]:
    """What a host's handler on the root logger writes (every level, messages only)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    level, root.level = root.level, logging.DEBUG
    root.addHandler(handler)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def late(prefix: str) -> logging.Logger:
    """A logger under ``prefix`` that no one has made before (a module imported for the first time)."""
    name = f"{prefix}.late_{uuid.uuid4().hex[:8]}"
    assert name not in logging.Logger.manager.loggerDict
    return logging.getLogger(name)


def said(logger: logging.Logger, out: io.StringIO) -> str:
    start = len(out.getvalue())
    logger.info("request url http://h/x?api_key=%s", KEY)
    logger.debug("auth header %s", BEARER)
    return out.getvalue()[start:]


@pytest.mark.parametrize("prefix", LIBRARY_LOGGERS)
def test_a_library_logger_made_after_the_mask_has_its_records_masked(prefix: str, seen: io.StringIO) -> None:
    with library_logs_masked(Secrets.of("a service", [KEY]).masked):
        made_late = late(prefix)
        text = said(made_late, seen)
        deeper = said(logging.getLogger(f"{made_late.name}.deeper"), seen)
    assert KEY not in text and "abc.def" not in text and text.count(MASK) == 2, text
    assert KEY not in deeper and "abc.def" not in deeper, deeper


def test_other_loggers_and_every_logger_after_the_last_plugin_leaves_are_untouched(seen: io.StringIO) -> None:
    before = logging.getLogRecordFactory()
    masked = Secrets.of("a service", [KEY]).masked
    with library_logs_masked(masked):
        with library_logs_masked(masked):  # nested: the inner leaving keeps the mask
            pass
        assert KEY not in said(late("httpx2"), seen)
        host = said(logging.getLogger("host.app.mask_test"), seen)  # not a library: as written
        near = said(logging.getLogger("httpx2x.mask_test"), seen)  # a prefix is not a parent
    assert KEY in host and BEARER in host and KEY in near
    assert logging.getLogRecordFactory() is before
    after = said(late("mcp.shared"), seen)
    assert KEY in after and BEARER in after  # nothing left


def test_a_factory_the_host_chains_on_top_is_kept_and_ours_goes_inert(seen: io.StringIO) -> None:
    original = logging.getLogRecordFactory()
    tagged: list[str] = []
    try:
        with library_logs_masked(Secrets.of("a service", [KEY]).masked):
            below = logging.getLogRecordFactory()

            def host_factory(*args: object, **kwargs: object) -> logging.LogRecord:
                record = below(*args, **kwargs)
                tagged.append(record.name)
                return record

            logging.setLogRecordFactory(host_factory)  # the host's, chained on top of ours
            assert KEY not in said(late("httpcore2"), seen)
        assert logging.getLogRecordFactory() is host_factory  # not torn out from under the host
        assert KEY in said(late("httpcore2"), seen)  # ours, still in the chain, changes nothing
        with library_logs_masked(Secrets.of("a service", [KEY]).masked):
            assert KEY not in said(late("mcp.os"), seen)  # and works again, without a second link
    finally:
        logging.setLogRecordFactory(original)
    assert tagged


class Kept(logging.Handler):
    """A host's handler that reads a record's template, arguments and exception (as Sentry's does)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_library_record_holding_no_secret_is_left_as_it_was_made() -> None:
    """Tester eleven: every library record was rewritten (``args`` and ``exc_info`` dropped) while a
    mask was in force, secret or not, so a host's handler lost the template and the exception."""
    kept, logger = Kept(), late("httpx2")
    logger.addHandler(kept)
    logger.setLevel(logging.DEBUG)
    with library_logs_masked(Secrets.of("a service", [KEY]).masked):
        try:
            raise ValueError("no secret here")
        except ValueError:
            logger.exception("request %s failed", "GET /x")
        logger.info("request url http://h/x?api_key=%s", KEY)
    plain, secret = kept.records
    assert (plain.msg, plain.args) == ("request %s failed", ("GET /x",))
    assert plain.exc_info is not None and isinstance(plain.exc_info[1], ValueError)
    assert KEY not in secret.getMessage() and MASK in secret.getMessage()  # one holding a secret: masked


def test_the_cost_on_an_unrelated_record_is_small() -> None:
    """Not a timing assertion: prints what the factory adds to making a host's record."""
    make = logging.getLogRecordFactory()
    args = ("host.app", logging.INFO, __file__, 1, "a host record %s", ("x",), None)
    bare = min(timeit.repeat(lambda: make(*args), number=20000, repeat=5))
    with library_logs_masked(Secrets.of("a service", [KEY]).masked):
        chained = logging.getLogRecordFactory()
        with_mask = min(timeit.repeat(lambda: chained(*args), number=20000, repeat=5))
    print(f"record factory: {bare / 20000 * 1e6:.2f} us bare, {with_mask / 20000 * 1e6:.2f} us with the mask")
    assert chained is not make  # the timing above measured the chained factory
