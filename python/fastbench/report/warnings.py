"""Warnings as records: a message that is also a ``str`` (so it prints and compares as the
text it always was) and carries a stable ``code`` and a ``severity`` that reports, files and
gates can sort and filter on. Nothing here decides when to warn.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SEVERITIES", "WarningRecord"]

SEVERITIES = ("info", "warning", "error")


class WarningRecord(str):
    """A warning's text, with ``code`` (a short kebab-case name such as "high-variation")
    and ``severity`` (one of :data:`SEVERITIES`).

    It is a ``str``: ``"drift" in record`` and ``record == "the text"`` work as before,
    and results files store the text alone.
    """

    code: str
    severity: str

    def __new__(cls, message: str, code: str, severity: str = "warning") -> WarningRecord:
        if not isinstance(message, str) or not message:
            raise ValueError("[WarningRecord] message must be a non-empty str")
        if not isinstance(code, str) or not code:
            raise ValueError("[WarningRecord] code must be a non-empty str")
        if severity not in SEVERITIES:
            raise ValueError(f"[WarningRecord] severity must be one of {SEVERITIES}, "
                             f"got {severity!r}")
        self = super().__new__(cls, message)
        self.code = code
        self.severity = severity
        return self

    @property
    def message(self) -> str:
        """The text alone, as a plain str."""
        return str.__str__(self)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message}

    def __reduce__(self) -> tuple[Any, ...]:
        return (WarningRecord, (self.message, self.code, self.severity))
