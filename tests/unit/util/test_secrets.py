"""The one home of redaction (``_util.secrets``) and of safe URL parsing (``_util.urls``).

Expected outputs are written from the definitions (a held secret, any of its encoded forms,
any piece of 8 characters of it, in any case, is replaced by ``[redacted]``), never taken
from the code's own output.
"""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from searchbench._util.secrets import REDACTED, hold, hold_url, redact, redacted, remote_text
from searchbench._util.urls import public_url, split_url
from searchbench.errors import ConfigError

SECRET = "tk-unit/4a9c+e2f=77d0b1c3e5"  # held once for this module
hold(SECRET)


def pieces(text: str, secret: str = SECRET) -> list[str]:
    return [secret[i:i + 8] for i in range(len(secret) - 7) if secret[i:i + 8] in text]


@pytest.mark.parametrize("form", [
    SECRET, SECRET.upper(), urllib.parse.quote(SECRET, ""), urllib.parse.quote_plus(SECRET),
    json.dumps(SECRET)[1:-1].replace("/", "\\/"), SECRET[:14], SECRET[9:],
    base64.b64encode(SECRET.encode()).decode(), f"Bearer {SECRET}",
])
def test_every_form_and_piece_of_a_held_secret_is_redacted(form):
    text = redact(f"before {form} after")
    assert text.startswith("before ") and text.endswith(" after") and REDACTED in text
    assert not pieces(text) and not pieces(text.lower(), SECRET.lower())


def test_short_values_and_unrelated_text_are_kept():
    assert redact("HTTP 429: slow down") == "HTTP 429: slow down"
    assert redact(SECRET[:7]) == SECRET[:7]  # shorter than a piece: not a secret's piece
    hold("abc", "", None)  # too short to be told from text: not held
    assert redact("abc") == "abc"
    assert redact("Authorization: Bearer anything-at-all") == f"Authorization: Bearer {REDACTED}"


@pytest.mark.parametrize("pad", [0, 70, 75, 79, 195, 199])
def test_remote_text_redacts_before_it_cuts(pad):
    """A secret across the cut: redacted whole, the marker itself never cut."""
    for limit in (80, 200):
        shown = remote_text(("x" * pad + SECRET + "y" * 300).encode(), limit)
        assert not pieces(shown)
        assert "[red" not in shown.replace(REDACTED, "")  # no cut marker


def test_remote_text_is_one_printable_line():
    shown = remote_text(b"\x1b[2J line\none\x00 " + SECRET[:10].encode() + b"\r\n"
                        + SECRET[10:].encode())
    assert shown.isprintable() and "\n" not in shown and "\x1b" not in shown
    assert not pieces(shown)


def test_redacted_walks_json_like_objects():
    got = redacted({"command": ["run", f"--x={SECRET}"], SECRET: 1, "n": 2.5})
    assert got == {"command": ["run", f"--x={REDACTED}"], REDACTED: 1, "n": 2.5}


@pytest.mark.parametrize(("url", "password"), [
    ("pgvector://u:Pa55w0rd-xyz@host/db", "Pa55w0rd-xyz"),
    ("pgvector://u:Pa55/w0rd-xyz@host/db", "Pa55/w0rd-xyz"),  # misread: '/' ends the netloc
    ("http://u:Pa55%40w0rd-xyz@host/v1", "Pa55@w0rd-xyz"),
    ("http://host/v1?api_key=Pa55w0rd-xyz&q=1", "Pa55w0rd-xyz"),
])
def test_hold_url_holds_the_password_as_written_and_decoded(url, password):
    hold_url(url)
    assert not pieces(redact(f"x {password} y"), password)
    assert not pieces(redact(f"x {urllib.parse.quote(password, '')} y"), password)


@pytest.mark.parametrize(("url", "reason"), [
    ("pgvector://user:Pg5ecret/a1@h/app", "not a port number"),
    ("pgvector://user:Pg5ecret-a2@h:99999/app", "outside 0-65535"),
    ("http://user:Pg5ecret-a3@[::1/v1", "unmatched"),
])
def test_split_url_says_what_is_wrong_without_the_password(url, reason):
    with pytest.raises(ConfigError, match=reason) as info:
        split_url(url, "store URL")
    text = str(info.value)
    assert "Pg5ecret" not in text and "user" not in text and info.value.__cause__ is None


def test_public_url_drops_user_password_and_credential_values():
    assert public_url("https://u:p@h.example:8443/v1?api_key=k&x=1") == \
        "https://h.example:8443/v1?api_key=[redacted]&x=1"
