import os
import sys

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

from lessonlib import runtime

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
    """Every figure a test opened is closed after it (widget tests open many), and pyplot's
    backend is Agg again: importing ipympl's backend module makes it pyplot's backend, and the
    tests after would silently get ipympl canvases (whose draws may resend a frame instead of
    rendering it)."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        plt = sys.modules["matplotlib.pyplot"]
        plt.close("all")
        if plt.get_backend().lower() != "agg":
            plt.switch_backend("Agg")


@pytest.fixture
def ax():
    """A fresh axes on a constrained-layout figure (closed by ``close_figures``)."""
    import matplotlib.pyplot as plt
    return plt.subplots(layout="constrained")[1]


# torch and triton are optional (lessonlib.runtime): a test marked needs("torch") skips, with the
# reason, where the package is absent by design, and fails where it is pinned but missing.
SKIP_PREFIX = "needs "


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(*packages): the test needs torch and/or triton")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs"):
        for package in mark.args:
            if runtime.installed(package):
                continue
            if runtime.expected_missing(package):
                pytest.skip(f"{SKIP_PREFIX}{package}: {runtime.missing_cause(package)}")
            pytest.fail(runtime.missing_reason(package), pytrace=False)


def _unexplained_skips(session):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    return [r for r in skipped if not (isinstance(r.longrepr, tuple)
                                       and r.longrepr[2].startswith(f"Skipped: {SKIP_PREFIX}"))]


def pytest_sessionfinish(session, exitstatus):
    """Under CI=true nothing skips except what this environment's profile leaves out."""
    if os.environ.get("CI") and exitstatus == 0 and _unexplained_skips(session):
        names = ", ".join(r.nodeid for r in _unexplained_skips(session)[:5])
        print(f"\nCI: tests skipped for a reason other than the profile: {names}")
        session.exitstatus = 1
