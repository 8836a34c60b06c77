"""What this machine can run: torch and triton are optional, and which platforms get them.

Everything in lessonlib except ``triton_attention`` (torch and triton) and ``tinylm`` (torch)
needs only numpy, matplotlib and the Jupyter stack. ``requirements.txt`` pins torch and triton
with environment markers, and the rule here is the same rule (a test evaluates those markers for
every platform and compares):

  torch   Linux (x86-64, aarch64), macOS on Apple silicon, Windows x86-64
  triton  Linux (x86-64, aarch64) only: triton publishes no wheels for macOS or Windows

An environment can also leave both out on purpose (``make test WITHOUT_TORCH=1`` builds one,
as CI does to exercise what a student without torch gets): the Makefile then writes the names
into ``lessonlib-without.txt`` in the environment's prefix, and nothing here treats their absence
as a broken install.

Nothing here prints: ``describe()`` returns the profile as text (``make profile`` prints it), and
``lessonlib.requires`` turns ``missing_reason`` into the notebooks' ``%%requires`` cell magic.
Only the standard library is imported. A ``package`` argument is exactly "torch" or "triton";
anything else is a ValueError.
"""
import importlib.util
import os
import platform
import sys
from pathlib import Path

__all__ = ["OPTIONAL", "PLATFORMS", "pinned_for", "platform_key", "left_out", "installed",
           "missing_reason", "missing_cause", "expected_missing", "profile", "describe",
           "PRESENTER_ENV", "in_presenter"]

OPTIONAL = ("torch", "triton")
"""The optional packages: ("torch", "triton")."""

# (sys.platform, platform.machine()) -> the optional packages that platform gets.
PLATFORMS = {
    ("linux", "x86_64"): ("torch", "triton"),
    ("linux", "aarch64"): ("torch", "triton"),
    ("darwin", "arm64"): ("torch",),
    ("win32", "AMD64"): ("torch",),
    ("darwin", "x86_64"): (),  # Intel Macs: torch stopped publishing wheels for them
}
"""(sys.platform, platform.machine()) -> the optional packages requirements.txt installs there
(Intel Macs: none, torch publishes no wheels for them)."""
_NAMES = {"linux": "Linux", "darwin": "macOS", "win32": "Windows"}
_LEFT_OUT_FILE = "lessonlib-without.txt"
# Set to 1 by scripts/present.py (make present) for Voila's kernel: the presenter shows only the
# widgets, so it skips what only the notebook's text and printed outputs need.
PRESENTER_ENV = "LESSONLIB_PRESENTER"
"""The environment variable the presenter's kernel sets to 1: "LESSONLIB_PRESENTER"."""


def in_presenter():
    """True in the kernel of the presenter (make present), where only widgets are shown."""
    return os.environ.get(PRESENTER_ENV) == "1"


# This module stays stdlib-only (scripts/check_pins.py imports it with no environment), so it
# cannot import lessonlib._validate (numpy); these two give the same messages as its checks.

def _describe(value):
    shown = repr(value)
    return f"{shown[:57] + '...' if len(shown) > 60 else shown} (a {type(value).__name__})"


def _package(package):
    """``package`` when it is one of OPTIONAL ("torch" or "triton", spelled exactly), as
    ``_validate.choice`` checks it."""
    if not (type(package) is str and package in OPTIONAL):
        listed = ", ".join(repr(p) for p in OPTIONAL)
        raise ValueError(f"package must be one of {listed}; got {_describe(package)}")
    return package


def _text(name, value):
    """``value`` when it is a str, as ``_validate.text`` checks it."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {_describe(value)}")
    return value


def platform_key(sys_platform=None, machine=None):
    """(sys.platform, machine) of this machine, or of the one given, as PLATFORMS keys it.
    A platform that is not in PLATFORMS is a valid key: it gets no optional package."""
    sys_platform = sys.platform if sys_platform is None else _text("sys_platform", sys_platform)
    machine = platform.machine() if machine is None else _text("machine", machine)
    if sys_platform == "linux" and machine == "arm64":
        machine = "aarch64"  # some Linux distributions say arm64
    return sys_platform, machine


def pinned_for(package, sys_platform=None, machine=None):
    """True when requirements.txt installs ``package`` (torch or triton) on that platform
    (default: this one)."""
    package = _package(package)
    return package in PLATFORMS.get(platform_key(sys_platform, machine), ())


def left_out(prefix=None):
    """The optional packages this environment was built without on purpose (WITHOUT_TORCH=1).
    ``prefix``: the environment's directory (a str or path; default ``sys.prefix``)."""
    if prefix is not None and not isinstance(prefix, (str, os.PathLike)):
        raise ValueError(f"prefix must be a directory path (a str or os.PathLike), "
                         f"got {_describe(prefix)}")
    path = Path(sys.prefix if prefix is None else prefix) / _LEFT_OUT_FILE
    if not path.exists():
        return ()
    names = tuple(path.read_text().split())
    bad = [n for n in names if n not in OPTIONAL]
    if bad:
        raise ValueError(f"{path}: package names must be among {OPTIONAL}, got {bad}")
    return names


def installed(package):
    """True when ``package`` can be imported here (without importing it)."""
    package = _package(package)
    try:
        return importlib.util.find_spec(package) is not None
    except ValueError:  # a module object in sys.modules without a spec, e.g. hidden by a test
        return False


def missing_cause(package):
    """Why ``package`` is absent here, as a clause; the three cases: this platform gets no
    wheels or this environment left it out (both by design), or it is pinned and still missing
    (a broken install)."""
    package = _package(package)
    key = platform_key()
    where = f"{_NAMES.get(key[0], key[0])} on {key[1]}"
    if package in left_out():
        return "this environment was built without torch and triton (WITHOUT_TORCH=1)"
    if not pinned_for(package):
        if package == "triton":
            return f"triton publishes wheels only for Linux (x86-64 and aarch64), not for {where}"
        return f"PyTorch publishes no wheels for {where}"
    return f"it is pinned for {where} but cannot be imported: the environment is incomplete"


def missing_reason(package):
    """None when ``package`` is installed; otherwise one sentence on why not and what to do."""
    package = _package(package)
    if installed(package):
        return None
    cause = missing_cause(package)
    if not expected_missing(package):
        return (f"{package} is not installed: {cause}; run `make clean-venv` and then "
                "`make lab` again.")
    if package == "triton" and pinned_for("torch") and "WITHOUT_TORCH" not in cause:
        return (f"triton is not installed: {cause}, so the kernel runs on Linux, in Triton's "
                "CPU interpreter or on an NVIDIA GPU, and this cell does not run here.")
    return f"{package} is not installed: {cause}, so this cell does not run here."


def expected_missing(package):
    """True when ``package`` is absent by design here (no wheels, or left out on purpose)."""
    package = _package(package)
    return not installed(package) and (package in left_out() or not pinned_for(package))


def profile():
    """'full', 'without triton' or 'without torch and triton': what this environment runs."""
    missing = [p for p in OPTIONAL if not installed(p)]
    return "full" if not missing else "without " + " and ".join(missing)


def describe():
    """The profile in one line, with versions: what ``make`` prints after an install."""
    lines = [f"lessonlib profile: {profile()} (Python {platform.python_version()}, "
             f"{' on '.join(platform_key())})"]
    for p in OPTIONAL:
        reason = missing_reason(p)
        if reason is None:
            from importlib.metadata import version
            lines.append(f"  {p} {version(p)}")
        else:
            lines.append(f"  {p}: not installed: {missing_cause(p)}")
    return "\n".join(lines)
