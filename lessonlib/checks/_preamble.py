"""The preamble every exercise check shares: one decorator, run before a check's own judging.

    @preamble                                        a value exercise
    @preamble(function="Give a function update(m, l, x) that returns (m_new, l_new).",
              probes=_SOFTMAX_PROBES)                a function exercise
    @preamble(mapping="give a dict such as ..., got {type}")   a dict exercise

Before the check's body sees the answer, in this order:

1. ``None`` (the unfilled value stub) is "not attempted" (``checks.exercise``);
2. an answer of the wrong kind is "not yet" with the hint given: ``function``, the hint for an
   answer that is not callable; ``mapping``, for one that is not a dict. ``{type}`` in the hint
   becomes the answer's type name (write a literal brace twice, as in ``str.format``);
3. a function that is still the notebook's stub (``checks.unfilled``: None, or
   NotImplementedError, on every probe) is "not attempted". ``probes``: argument tuples, or a
   function that returns them (built when a check runs, not at import).

And, as ``checks.exercise`` does for the whole call: an ``Unreadable`` that the body's readers
raise (``number``, ``vector``, ...) is "not yet" with its hint, and numpy's floating-point errors
on a student's values stay silent.

A decorated check carries its gates as ``check.preamble`` (a ``Preamble``): tests/test_checks.py
holds every public check of every topic module to them, and to the messages the notebooks show.
"""
import functools
from collections.abc import Mapping
from dataclasses import dataclass

from . import exercise, not_attempted, unfilled, wrong

__all__ = ["preamble", "Preamble"]


@dataclass(frozen=True)
class Preamble:
    """One check's gates: the hints for a non-function / non-dict answer, the stub's probes."""
    function: str | None = None  # the hint for an answer that is not callable
    mapping: str | None = None  # the hint for an answer that is not a dict
    probes: object = None  # argument tuples, or a function that returns them

    def __post_init__(self):
        if self.function is not None and self.mapping is not None:
            raise TypeError("preamble: an answer is a function or a dict, not both")
        if self.probes is not None and self.function is None:
            raise TypeError("preamble: probes try a function: give function= its hint")


def preamble(check=None, *, function=None, mapping=None, probes=None):
    """Decorate ``check(answer) -> Verdict`` with the shared preamble (module docstring); bare
    (``@preamble``) for a value exercise, or with ``function=``/``probes=`` or ``mapping=``."""
    gates = Preamble(function, mapping, probes)

    def decorate(body):
        name = body.__name__

        @functools.wraps(body)
        def gated(answer):
            kind = type(answer).__name__
            if function is not None and not callable(answer):
                return wrong(name, function.format(type=kind))
            if mapping is not None and not isinstance(answer, Mapping):
                return wrong(name, mapping.format(type=kind))
            if probes is not None and unfilled(answer, probes() if callable(probes) else probes):
                return not_attempted(name)
            return body(answer)

        run = exercise(gated)
        run.preamble = gates
        return run

    return decorate if check is None else decorate(check)
