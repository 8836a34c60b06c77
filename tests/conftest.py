import os
import sys

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

# Unit tests draw headless (make test sets this too), in this process whatever MPLBACKEND says.
# Notebooks run under nbval in their own kernels, outside tests/, and never see it.
os.environ.setdefault("MPLBACKEND", "Agg")
matplotlib.use("Agg")

# Machines here are noisy: no per-example deadline. CI runs a fixed, derandomized set so a red
# run is reproducible; locally hypothesis explores freely.
settings.register_profile(
    "ci", deadline=None, derandomize=True, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True)
def close_figures():
    """Every figure a test opened is closed after it (widget tests open many)."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture
def ax():
    """A fresh axes on a constrained-layout figure (closed by ``close_figures``)."""
    import matplotlib.pyplot as plt
    return plt.subplots(layout="constrained")[1]
