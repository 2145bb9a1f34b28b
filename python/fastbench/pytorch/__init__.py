"""fastbench's PyTorch side: :mod:`.dispatch` (the one dispatch layer, attributing every aten
op to its module, forward and backward), :mod:`.analyzer` (FLOP and byte counting on it),
:mod:`.aten_ops` (the cost of each aten op), :mod:`.loading` (models and inputs named on a
command line) and :mod:`.models` (the model zoo).

Every module but this one imports torch; this package imports none of them, so that
``import fastbench`` never loads torch. Import the module you need explicitly.
"""
