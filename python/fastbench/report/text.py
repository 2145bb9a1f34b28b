"""Text reports: every line formatter, gathered from the modules that hold one concern each
(clocks, isa, counters, measurement, comparison, placement; machine facts are
:mod:`.machine`). Returns strings or lists of lines and never prints; only the CLI prints.
"""

from __future__ import annotations

from .clocks import clock_lines
from .comparison import comparison_lines, instruction_comparison_lines
from .counters import counter_lines, instruction_count_lines, sample_counter_lines
from .isa import isa_lines
from .measurement import measurement_lines
from .placement import analysis_placement_lines

__all__ = ["analysis_placement_lines", "clock_lines", "comparison_lines", "counter_lines",
           "instruction_comparison_lines", "instruction_count_lines", "isa_lines",
           "measurement_lines", "sample_counter_lines"]
