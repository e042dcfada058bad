"""adapters/github/target: a token that cannot travel in an HTTP header is refused in one line, never shown."""

from __future__ import annotations

import pytest

from kestrel_release.adapters.github.target import resolve_token, token_problem
from kestrel_release.errors import PublishError

TOKEN = "Kestrel0Plain0Token0" + "x7" * 10


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("\n", "line break"),
        ("\r", "line break"),
        ("\0", "control character U+0000"),
        ("\t", "control character U+0009"),
        ("\x7f", "control character U+007F"),
        (" ", "space"),
        ("\u00e9", "non-ASCII"),
        ("\u20ac", "non-ASCII"),
    ],
)
def test_each_unsendable_character_is_named_with_its_place_not_the_token(bad: str, says: str) -> None:
    token = TOKEN[:10] + bad + TOKEN[10:]
    assert says in (token_problem(token) or "")
    for where, env in (("the token given", {}), ("GH_TOKEN", {"GH_TOKEN": token})):
        with pytest.raises(PublishError) as caught:
            resolve_token(token if not env else None, None, required=True, env=env)
        assert caught.value.exit_code == 6
        text = str(caught.value)
        assert where in text and f"character 11 of {len(token)}" in text
        assert TOKEN[:10] not in text and TOKEN[10:] not in text


def test_a_good_token_is_returned_stripped() -> None:
    assert token_problem(TOKEN) is None
    assert resolve_token(None, None, required=True, env={"GH_TOKEN": f"  {TOKEN}\n"}) == TOKEN
