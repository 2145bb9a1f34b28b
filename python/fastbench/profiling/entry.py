"""``fastbench.profile``: one name for both ways of profiling PyTorch code, a ``with`` block
around any code, or a step function run N times. The collector is PyTorch's
(:mod:`fastbench.pytorch.profiler`), imported only when called; code without torch is
profiled by :func:`fastbench.sample`.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["profile"]


def _is_module(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.nn.Module)


def profile(target: Any = None, *args: Any, steps: int | None = None,
            warmup: int | None = None, model: Any = None, roofline: Any = None,
            trace: bool = True, name: str | None = None, collector: str = "auto",
            **kwargs: Any) -> Any:
    """Where a PyTorch step's time goes, per op, module, op family and named region.

    Two forms:

    - ``with fastbench.profile(model) as prof:`` around any code (a training loop, a few
      inference calls); call ``prof.step()`` at the end of each step and name parts with
      ``with prof.region("data loading"):``. After the block ``prof`` answers as the
      :class:`~fastbench.profiling.Profile` (``prof.top()``, ``print(prof)``). ``model``
      may be omitted (the first module called is taken as the model); ``warmup`` steps are
      recorded but left out (default 0).
    - ``fastbench.profile(fn, *args, steps=20, **kwargs)`` runs ``fn(*args, **kwargs)``
      ``warmup`` times (default 2), then ``steps`` times profiled, alternating with
      ``steps`` unprofiled calls so the observer effect is measured side by side; returns
      the Profile. An ``nn.Module`` called with arguments is this form too.

    Parameters
    ----------
    roofline : Roofline, bool or None
        The ceilings the verdicts are judged against: by default a quick calibration
        (cached per machine) for PyTorch's thread count; False for none.
    trace : bool
        Keep the timeline for Chrome/Perfetto traces.
    name : str, optional
        What the report calls the run.
    collector : {"auto", "native", "dispatch"}
        What times the ops: "native", a C++ RecordFunction observer built on first use
        against the installed torch (a few hundred ns an op; needs a C++ compiler and
        ninja), is the default where it builds ("auto"), else "dispatch", a Python
        dispatch mode (several µs an op). Both costs are measured and subtracted. With the
        native observer the first profiled step counts FLOPs under the dispatch layer and
        is left out of the figures.

    Examples
    --------
    >>> prof = fastbench.profile(model, x, steps=30)          # doctest: +SKIP
    >>> print(prof.top(5, by="module"))                       # doctest: +SKIP
    >>> with fastbench.profile(model) as prof:                # doctest: +SKIP
    ...     for x, y in loader:
    ...         with prof.region("step"):
    ...             loss = loss_fn(model(x), y); loss.backward(); opt.step()
    ...         prof.step()
    """
    context = not args and steps is None and not kwargs and (target is None
                                                            or _is_module(target))
    try:
        from ..pytorch import profiler as _torch_profiler
    except ImportError as e:   # torch is not installed
        raise ImportError(f"fastbench.profile times PyTorch ops and needs torch ({e}); "
                          f"profile any Python code with fastbench.sample(fn, ...)") from e
    if context:
        return _torch_profiler.Profiler(target if model is None else model,
                                        warmup=0 if warmup is None else warmup,
                                        roofline=roofline, trace=trace, name=name,
                                        collector=collector)
    if not callable(target):
        raise TypeError(f"profile() takes a model (for a `with` block) or a callable to run "
                        f"as a step, got {type(target).__name__}")
    return _torch_profiler.profile_run(target, args, kwargs, steps=20 if steps is None
                                       else steps, warmup=2 if warmup is None else warmup,
                                       model=model, roofline=roofline, trace=trace,
                                       name=name, collector=collector)
