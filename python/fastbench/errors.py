"""Exception types of fastbench.

Bad arguments raise the built-in TypeError/ValueError; failures of the measuring domain
(a clock that cannot be used, counters that are missing) derive from FastbenchError.
"""

from __future__ import annotations


class FastbenchError(Exception):
    """Base class of fastbench's domain errors."""


class ClockUnavailable(FastbenchError, ValueError):
    """The requested clock cannot be used on this machine (the message says why)."""
