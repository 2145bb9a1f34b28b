"""fastbench.report.progress: the terminal bar the CLI passes to long library calls, drawn
in place and ended with a newline; no bar at all on a stream that is not a terminal."""

from __future__ import annotations

import io

from fastbench.report.progress import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_is_redrawn_in_place_and_ends_with_a_newline() -> None:
    out = _Terminal()
    show = progress_bar(out, "roofline", width=4)
    assert show is not None
    show(0, 2, "FMA peak float32")
    show(1, 2, "GEMM")
    show(2, 2, "done")
    pad = " " * 28
    assert out.getvalue() == (
        "\rroofline [....] 0/2 FMA peak float32" + " " * (28 - len("FMA peak float32"))
        + "\rroofline [##..] 1/2 GEMM" + " " * (28 - len("GEMM"))
        + "\rroofline [####] 2/2 done" + pad[len("done"):] + "\n")


def test_no_bar_off_a_terminal() -> None:
    assert progress_bar(io.StringIO(), "roofline") is None
