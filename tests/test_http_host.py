"""Strict `Host` parsing in front of the HTTP server's Host/Origin guard (contract §9, issue 26).

fastmcp's guard takes whatever precedes a `:` or `]` as the host, so `localhost:80@evil.com`
and `[::1].evil.com` passed as `localhost` and `::1`. `parse_host` reads RFC 9110's
`uri-host [":" port]` and nothing else; a request whose one `Host` header it cannot read
(or with none, or several) is refused with 400 before the guard. Checked on the parser with
hypothesis, and through a real `serve --transport http` process with raw HTTP requests.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_code_mode.http_host import parse_host

from .support import ROOT
from .test_http_serving import TOKEN, _config, _initialize, serving, wait_ready

REFUSED = [
    "localhost:80@evil.com",
    "[::1].evil.com",
    "localhost:abc",
    "",
    "user@localhost",
    "user:pw@localhost:80",
    "local host",
    " localhost",
    "localhost ",
    "localhost:80 ",
    "localhost:80/path",
    "localhost/",
    "localhost?x",
    "localhost#x",
    "localhost:",
    ":80",
    "::1",
    "[::1",
    "::1]",
    "[::1]x",
    "[::1]:",
    "[::1]:80x",
    "[]",
    "[v1.fe]",
    "[127.0.0.1]",
    "[fe80::1%eth0]",
    "[fe80::1%25eth0]",
    "localhost:65536",
    "localhost:123456",
    "localhost:-1",
    "localhost:+80",
    "localhost:8\u0660",  # an Arabic-Indic digit
    "a:b:c",
    "localhost:80:80",
    "exa\u00f1ple.com",
    "localhost\t",
    "evil.com\\@localhost",
    "[::1]@evil.com",
]


@pytest.mark.parametrize("value", REFUSED)
def test_hosts_that_are_refused(value: str) -> None:
    assert parse_host(value) is None


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("localhost", ("localhost", None)),
        ("localhost:8000", ("localhost", 8000)),
        ("127.0.0.1:80", ("127.0.0.1", 80)),
        ("[::1]", ("::1", None)),
        ("[::1]:8080", ("::1", 8080)),
        ("[2001:db8::7]:443", ("2001:db8::7", 443)),
        ("MCP.Example.com", ("MCP.Example.com", None)),
        ("xn--bcher-kva.example:1", ("xn--bcher-kva.example", 1)),
        ("localhost:0", ("localhost", 0)),
        ("localhost:65535", ("localhost", 65535)),
    ],
)
def test_hosts_that_are_read(value: str, parsed: tuple[str, int | None]) -> None:
    assert parse_host(value) == parsed


_REG_NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;="
reg_names = st.text(alphabet=_REG_NAME_CHARS, min_size=1, max_size=30)
ipv4 = st.ip_addresses(v=4).map(str)
ipv6 = st.ip_addresses(v=6).map(lambda a: f"[{a}]")
hosts = reg_names | ipv4 | ipv6
ports = st.none() | st.integers(0, 65535)


def _unbracketed(host: str) -> str:
    return host[1:-1] if host.startswith("[") else host


@given(hosts, ports)
def test_any_rfc_host_and_port_is_read(host: str, port: int | None) -> None:
    value = host if port is None else f"{host}:{port}"
    assert parse_host(value) == (_unbracketed(host), port)


@given(hosts, ports, st.sampled_from('@/?# \t\\[]"<>^`{|}\x00\x7f\u00e9'), st.text(max_size=10))
def test_a_host_with_anything_else_is_refused(
    host: str, port: int | None, bad: str, tail: str
) -> None:
    """A valid Host with a character outside the grammar (userinfo, path, spaces, ...)."""
    value = (host if port is None else f"{host}:{port}") + bad + tail
    assert parse_host(value) is None


@given(st.text(max_size=40))
def test_whatever_is_read_is_a_host_and_port_with_nothing_else(value: str) -> None:
    parsed = parse_host(value)
    if parsed is None:
        return
    host, port = parsed
    assert (host and not any(c in host for c in "@/?#[] \t")) or _is_ipv6(host)
    assert port is None or 0 <= port <= 65535
    if ":" in host:  # only a bracketed IPv6 literal holds colons
        assert value.startswith(f"[{host}]")


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


# --- through a real server ------------------------------------------------------------


async def _raw_request(port: int, host_lines: list[str]) -> int:
    """POST an MCP `initialize` with these `Host:` lines, as bytes on a socket; the status."""
    body = json.dumps(_initialize()).encode()
    head = [
        "POST /mcp HTTP/1.1",
        *host_lines,
        "content-type: application/json",
        "accept: application/json, text/event-stream",
        f"authorization: Bearer {TOKEN}",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 30)
    finally:
        writer.close()
    return int(status_line.split()[1])


@pytest.mark.slow
async def test_the_server_refuses_what_the_parser_refuses(tmp_path: Path) -> None:
    settings = {
        "MCP_CODE_HTTP_TOKEN": TOKEN,
        "MCP_CODE_HTTP_ALLOWED_HOSTS": "mcp.example.com",
        "PYTHONPATH": str(ROOT / "src"),  # this tree's code, not an installed copy
    }
    async with serving(_config(tmp_path), tmp_path / "serve.log", **settings) as instance:
        await wait_ready(instance)
        port = instance.port

        async def status(*values: str) -> int:
            return await _raw_request(port, [f"Host: {v}" for v in values])

        for value in REFUSED:
            if value.strip() != value or "\t" in value:
                continue  # HTTP trims header whitespace: the server never sees it
            encodable = value.encode("latin-1", "replace").decode("latin-1")
            assert await status(encodable) == 400, value
        assert await status("localhost", "evil.example.com") == 400  # two Host headers
        assert await _raw_request(port, []) == 400  # none
        assert await status("evil.example.com") == 421  # read, and not allowed
        assert await status("evil.example.com:80") == 421
        assert await status(f"127.0.0.1:{port}") == 200
        assert await status(f"localhost:{port}") == 200
        assert await status("mcp.example.com") == 200
        assert await status("[::1]") == 200
