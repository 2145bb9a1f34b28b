"""The version of fastbench; the build reads it from here (single source of truth)."""

__version__ = "0.1.0"
