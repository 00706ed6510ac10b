"""What upstreams make the gateway log: the MCP SDK's own records that quote them (an SSE
`event:` field, a notification it could not read, with a traceback each) and the upstream's
errors in our warnings are cleaned, one line, cut and (warnings) rate-limited (attack 120:
20,000 bad notifications wrote 277,000 lines; a failed refresh 2 MB with escapes)."""

from __future__ import annotations

import logging
import re
import time

import pytest

from mcp_code_mode.upstreams.server_log import quiet_sdk_logs, shown

UNCLEAN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_the_sdks_records_are_cleaned_cut_and_rate_limited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet_sdk_logs()
    caplog.set_level(logging.DEBUG)
    sdk = logging.getLogger("client")  # the MCP SDK's session logs under this name
    try:
        raise ValueError("x" * 100_000)
    except ValueError:
        for _ in range(500):
            sdk.warning(
                "Failed to validate notification: %s", "\x1b]0;PWN\x07" + "y" * 9000, exc_info=True
            )
    time.sleep(0.6)  # one more is let through, saying how many were dropped
    sdk.warning("Unknown SSE event: %s", "\x1b[2J\nFAKE LINE")
    records = [r for r in caplog.records if r.name == "client"]
    assert 20 <= len(records) <= 23, len(records)
    for record in records:
        text = caplog.handler.format(record)
        assert len(text) < 1_300 and not UNCLEAN.search(text) and "\n" not in text, text[:300]
        assert record.exc_info is None
    assert records[0].getMessage().endswith("… [9,041 characters in all] (ValueError)")
    dropped = re.search(r"\((\d+) earlier messages dropped", records[-1].getMessage())
    assert dropped and int(dropped[1]) + len(records) == 501, records[-1].getMessage()
    assert records[-1].getMessage().startswith("Unknown SSE event:  FAKE LINE")


def test_an_upstreams_text_is_shown_as_one_clean_line() -> None:
    assert shown("a\x1b[31m\nb\tc", 100) == "a b c"
    assert not UNCLEAN.search(shown({"k": ["\x1b]52;c;x\x07v"]}))  # JSON escapes them
    assert shown("z" * 5_000, 10) == "zzzzzzzzzz… [5,000 characters in all]"
