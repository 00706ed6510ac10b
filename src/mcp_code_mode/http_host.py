"""Reading a `Host` header (RFC 9110 §7.2) strictly, before fastmcp's Host/Origin guard.

fastmcp's guard takes whatever precedes a `:` or `]` as the host, so `localhost:80@evil.com`
or `[::1].evil.com` would pass it as `localhost` or `::1`. `parse_host` reads a header only
when the whole of it is a host and an optional port; the HTTP gate (`http_gate`) refuses a
request whose one `Host` header it cannot read, with 400.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["parse_host"]

# RFC 3986 §3.2.2 reg-name: unreserved, pct-encoded and sub-delims characters (an empty one,
# which RFC 3986 allows, is no host to serve); IPv4 addresses are reg-names by this syntax.
_REG_NAME = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+")
_PORT = re.compile(r"[0-9]{1,5}")


def parse_host(value: str) -> tuple[str, int | None] | None:
    """The host and port of a `Host` header (RFC 9110 §7.2: `uri-host [":" port]`), or None
    when it is anything else: userinfo, a path, spaces, an unbracketed or zoned IPv6
    address, a port that is not 1-5 digits up to 65535, trailing junk. A bracketed IPv6
    literal comes back without its brackets; nothing is decoded or lowered."""
    host, port = value, None
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[1:end], value[end + 1 :]
        if end < 0 or not _is_ipv6(host) or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    elif ":" in value:
        host, port = value.split(":", 1)
    if not value.startswith("[") and not _REG_NAME.fullmatch(host):
        return None
    if port is None:
        return host, None
    if not _PORT.fullmatch(port) or int(port) > 65535:
        return None
    return host, int(port)


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return "%" not in text  # a zone id belongs to no Host header
