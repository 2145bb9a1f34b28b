"""Progress bars for a terminal: the callable a long library call (``calibrate``) reports its
steps to. The library never draws one; the CLI builds the bar here and passes it in. Nothing
else prints in this module.
"""

from __future__ import annotations

from typing import Callable, TextIO

__all__ = ["Progress", "progress_bar"]

# progress(done, total, what): ``done`` of ``total`` steps finished, ``what`` names the step
# about to run ("done" once done == total).
Progress = Callable[[int, int, str], None]


def progress_bar(stream: TextIO, label: str, width: int = 24) -> Progress | None:
    """A progress callable drawing ``label [####....] done/total what`` on ``stream``.

    The bar is redrawn in place (carriage return) and ends with a newline once
    ``done == total``.

    Parameters
    ----------
    stream : text stream
        Where to draw, usually ``sys.stderr``.
    label : str
        Written before the bar ("roofline").
    width : int
        Characters of the bar itself.

    Returns
    -------
    callable(done, total, what) or None
        None when ``stream`` is not a terminal: a log or a pipe gets no bar.
    """
    if not stream.isatty():
        return None

    def show(done: int, total: int, what: str) -> None:
        filled = width * done // total if total else width
        end = "\n" if done == total else ""
        print(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what:<28}",
              end=end, file=stream, flush=True)
    return show
