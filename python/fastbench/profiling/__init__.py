"""Where time goes: the profile of a run split into steps (:mod:`.result`), PyTorch's
``fastbench.profile`` (:mod:`.entry`), Amdahl's law and the ratio statistics of shares
(:mod:`.shares`), traces and folded stacks (:mod:`.export`), which items changed between
two profiles (:mod:`.diff`), and the sampling profiler for any Python code
(:mod:`.sampler`), and ``@profiled``, every call of any function timed and its memory
tracked (:mod:`.calls`, its result :mod:`.call_profile`).

Framework-free: nothing here imports torch at module level.
"""

from __future__ import annotations

from .call_profile import CallProfile
from .calls import ProfiledFunction, profiled
from .diff import ProfileChange, ProfileDiff
from .diff import diff as diff_profiles
from .entry import profile
from .export import chrome_trace, folded_stacks, write_chrome_trace, write_folded
from .sampler import (MIN_INTERVAL_S, SampleProfile, SampleRow, SampleRows, Sampler, sample,
                      sample_script)
from .result import (BOUNDS, BYS, FAMILIES, NOT_IN_OP, OUTSIDE, Bottleneck, Bottlenecks, Cell,
                     Overhead, Profile, ProfileRow, ProfileRows, Projection, TraceEvent,
                     op_family)
from .shares import amdahl, ratio_ci

__all__ = ["BOUNDS", "BYS", "Bottleneck", "Bottlenecks", "CallProfile", "Cell", "FAMILIES",
           "NOT_IN_OP", "ProfiledFunction", "profiled",
           "MIN_INTERVAL_S", "OUTSIDE", "Overhead", "Profile", "ProfileChange", "ProfileDiff",
           "ProfileRow", "ProfileRows", "Projection", "SampleProfile", "SampleRow", "SampleRows",
           "Sampler", "TraceEvent", "amdahl", "chrome_trace", "diff_profiles", "folded_stacks",
           "op_family", "profile", "ratio_ci", "sample", "sample_script", "write_chrome_trace",
           "write_folded"]
