"""lessonlib.widgets.tinylm: the committed results' views refuse what is not a result, and the
extension slider a length or a cell the sweep does not hold (tests/_bad.py). What each view
draws is tested in test_plots_tinylm.py."""
import numpy as np
from _bad import Case, bad_input_tests, choices, ints
from hypothesis import strategies as st

from lessonlib import tinylm_results as R
from lessonlib.widgets import tinylm as W

EXTENSION, NEEDLES, SINKS, STREAMING = (R.load_results(n) for n in R.RESULT_NAMES)
ROWS, SUMMARY = R.load_training_log()
_NOT_RESULTS = st.sampled_from([None, [], {}, "extension", np.zeros(3)])

BAD_INPUTS = [
    Case(W.extension_explorer, args=(EXTENSION,), kwargs=dict(length=512),
         bad=dict(extension=_NOT_RESULTS, length=ints(minimum=1) | st.just(300),
                  cells=st.sampled_from([[("nobody", "plain")], [("base", "nothing")]]))),
    Case(W.training_view, args=(ROWS, SUMMARY),
         bad=dict(rows=st.sampled_from([None, [], "log", {}]), summary=_NOT_RESULTS)),
    Case(W.needle_view, args=(NEEDLES,), bad=dict(needles=_NOT_RESULTS)),
    Case(W.sink_view, args=(SINKS,), bad=dict(sinks=_NOT_RESULTS,
                                              key=choices(["mass_first1", "mass_first4"]))),
    Case(W.stream_view, args=(STREAMING,), bad=dict(streaming=_NOT_RESULTS)),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
