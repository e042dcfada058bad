"""console.safe: the one escape of control characters in human output."""

from __future__ import annotations

from kestrel_release import console


def test_every_control_character_is_escaped_and_the_rest_kept():
    assert console.safe("a\x1b[2Jb\nc\td\re\x00\x7f\x85\x9bé✓") == "a\\x1b[2Jb\\nc\\td\\re\\x00\\x7f\\x85\\x9bé✓"
    assert console.safe("plain name-1.0.whl") == "plain name-1.0.whl"
