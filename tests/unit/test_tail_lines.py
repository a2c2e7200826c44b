"""Log tails read from the end agree with reading the whole file."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cdclab.services.base import tail_lines


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                               blacklist_characters="\n\r\x0b\x0c\x1c\x1d"
                                               "\x1e\x85\u2028\u2029"),
                        max_size=3000), max_size=60),
       st.booleans(), st.integers(min_value=1, max_value=70))
def test_the_tail_equals_the_whole_file_s_last_lines(lines, final_newline, n) -> None:
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "service.log"
        path.write_text(text, encoding="utf-8")
        assert tail_lines(path, n) == text.splitlines()[-n:]
