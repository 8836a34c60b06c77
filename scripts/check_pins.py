"""Prove that requirements.txt resolves from the public index on every platform students use.

    python scripts/check_pins.py --uv .tools/bin/uv          # what `make check-pins` runs
    python scripts/check_pins.py --uv .tools/bin/uv --with-cuda   # download sizes incl. CUDA

For each platform x Python (3.11, 3.12, 3.13) it runs `uv pip compile` with that platform's
markers and wheel tags (`--python-platform`, `--only-binary :all:`: a student's machine needs
no compiler), then checks the result: every pin of ours that applies there is in it at its
version, torch and triton are there exactly where lessonlib.runtime says (the notebooks' rule),
and no NVIDIA package slipped past the overrides. It prints one row per resolution (the profile
and the download size of the wheels) and fails naming the platform and uv's reason for any
conflict. Before the matrix, a self-test resolves a pin that must conflict (triton 3.9.0 beside
torch 2.13.0 on Linux) and fails unless the check reports it.

Linux resolutions leave out the CUDA libraries (scripts/pins-overrides.txt says why), so their
sizes exclude them; --with-cuda resolves without the overrides, where the index serves them.

The environments the Makefile installs with --no-deps on top of another's packages are resolved
too, layer by layer as they are installed: each file with requirements.txt and every file of the
layers under it (ON_TOP), checked against the resolution of the layer right under it on the same
target (the same check for each): every pin of the file at its version and none already in that
environment, every version of that resolution unchanged, and nothing added that is not pinned in
the file. Failures name the file ("requirements-hub.txt: ..."); where the layer under a file
failed to resolve, the file is reported failed there too, saying so.
  - requirements-grading.txt (.venv-grading, the instructors' nbgrader), on top of .venv:
    requirements.txt + requirements-grading.txt, checked against requirements.txt's resolution;
    every platform x Python.
  - requirements-hub.txt (.venv-hub, JupyterHub for a class on one machine), on top of
    .venv-grading: requirements.txt + requirements-grading.txt + requirements-hub.txt, checked
    against the grading resolution; the Linux targets only (x86-64 and aarch64, each Python).
    The hub runs on Linux alone (PAM, UNIX accounts), so macOS and Windows are skipped for it:
    it is not meant to resolve there.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lessonlib import runtime  # noqa: E402  (stdlib only: no environment needed)

PYTHONS = ("3.11", "3.12", "3.13")
# (label, uv's --python-platform, runtime.PLATFORMS key)
TARGETS = (
    ("Linux x86-64", "x86_64-unknown-linux-gnu", ("linux", "x86_64")),
    ("Linux aarch64", "aarch64-unknown-linux-gnu", ("linux", "aarch64")),
    ("macOS arm64", "aarch64-apple-darwin", ("darwin", "arm64")),
    ("Windows x86-64", "x86_64-pc-windows-msvc", ("win32", "AMD64")),
    ("macOS x86-64", "x86_64-apple-darwin", ("darwin", "x86_64")),
)
OVERRIDES = ROOT / "scripts" / "pins-overrides.txt"
GRADING = ROOT / "requirements-grading.txt"
HUB = ROOT / "requirements-hub.txt"
# A file installed with --no-deps on top of another environment's packages: its default path, the
# option of the layer it is installed on (None: requirements.txt's .venv), the sys_platforms of
# TARGETS it is resolved for (None: all) and what its table's title adds.
Layer = collections.namedtuple("Layer", "path on platforms note")
ON_TOP = {  # {option: Layer}
    "grading": Layer(GRADING, None, None, ""),
    "hub": Layer(HUB, "grading", ("linux",), " (Linux targets only: PAM, UNIX accounts; macOS "
                                             "and Windows skipped)"),
}
NVIDIA = re.compile(r"^(nvidia-|cuda-)")


def our_pins(path):
    """{name: (version, marker text or None)} of requirements.txt's pinned lines."""
    pins = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, _, marker = line.partition(";")
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", spec.strip())
        if not m:
            raise SystemExit(f"{path}: {line!r} is not pinned with ==")
        pins[m.group(1).lower()] = (m.group(2), marker.strip() or None)
    return pins


def compile_lock(uv, requirements, platform, python, out_dir, overrides=True):
    """(returncode, uv's stderr, {name: (version, wheel bytes)})."""
    out = Path(out_dir) / f"pylock.{platform.replace('-', '_')}_{python.replace('.', '')}.toml"
    cmd = [uv, "pip", "compile", "--quiet", "--no-header", "--only-binary", ":all:",
           "--python-platform", platform, "--python-version", python,
           "--format", "pylock.toml", "-o", str(out), str(requirements)]
    if overrides and "linux" in platform:
        cmd[3:3] = ["--overrides", str(OVERRIDES)]
    env = dict(os.environ, MACOSX_DEPLOYMENT_TARGET="14.0")  # torch ships macOS 14 wheels
    run = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        return run.returncode, run.stderr, {}
    lock = tomllib.loads(out.read_text())
    return 0, run.stderr, {p["name"]: (p["version"], sum(w.get("size", 0) for w in p.get("wheels", [])))
                           for p in lock["packages"]}


def _applies(marker, key, python):
    """Evaluate a requirements.txt marker for a platform key, with the little grammar we use."""
    if marker is None:
        return True
    env = {"sys_platform": key[0], "platform_machine": key[1], "python_version": python}
    expr = re.sub(r'(\w+) (==|!=) "([^"]*)"',
                  lambda m: repr((env[m.group(1)] == m.group(3)) == (m.group(2) == "==")), marker)
    if not re.fullmatch(r"[()\sTrueFalsandor]*", expr):
        raise SystemExit(f"requirements.txt: marker {marker!r} uses more than ==, !=, and, or")
    return eval(expr)  # only True/False/and/or/parentheses are left


def check(pins, resolved, key, python, overrides=True):
    errors = []
    for name, (version, marker) in pins.items():
        want = _applies(marker, key, python)
        got = resolved.get(name, (None,))[0]
        if want and got != version:
            errors.append(f"{name}=={version} applies here but resolved to {got}")
        if not want and got is not None:
            errors.append(f"{name} is not pinned here but was resolved ({got})")
    for name in runtime.OPTIONAL:
        if (name in resolved) != runtime.pinned_for(name, *key):
            errors.append(f"{name}: lessonlib.runtime says {runtime.pinned_for(name, *key)}, "
                          f"the resolution {'has' if name in resolved else 'lacks'} it")
    if overrides:
        errors += [f"{n} is not left out by scripts/pins-overrides.txt: add it there"
                   for n in resolved if NVIDIA.match(n)]
    return errors


def on_top_for(key, on_top=ON_TOP):
    """The options of ``on_top`` ({option: Layer}) resolved for the target with runtime.PLATFORMS
    key ``key``, in ``on_top``'s order."""
    return [option for option, layer in on_top.items()
            if layer.platforms is None or key[0] in layer.platforms]


def stack(option, on_top=ON_TOP):
    """The layers that make ``option``'s environment, bottom up: None (requirements.txt), the
    options of ``on_top`` under it, then ``option`` itself; the -r lines of its resolution."""
    return [None] if option is None else stack(on_top[option].on, on_top) + [option]


def check_on_top(label, extra_pins, base, combined, below="requirements.txt"):
    """Errors of the resolution ``combined`` (the file ``label``, whose pins are ``extra_pins``,
    with the files under it) against ``base``, the resolution of the environment it is installed
    on (the file ``below``, with those under it), each starting with ``label``: a pin of the file
    not at its version, or already in base; a base version that moved; a package added that the
    file lacks."""
    errors = []
    for name, (version, _) in extra_pins.items():
        if name in base:
            errors.append(f"{name} is already in {below}'s environment "
                          f"({base[name][0]}): remove it from {label}")
        elif combined.get(name, (None,))[0] != version:
            errors.append(f"pin {name}=={version} resolved to {combined.get(name, (None,))[0]}")
    errors += [f"moves {n} from {v} to {combined.get(n, (None,))[0]}: the versions of "
               f"{below}'s environment must stay" for n, (v, _) in base.items()
               if combined.get(n, (None,))[0] != v]
    errors += [f"{n}=={v} is added but not pinned in {label}" for n, (v, _) in combined.items()
               if n not in base and n not in extra_pins]
    return [f"{label}: {e}" for e in errors]


def self_test(uv, tmp):
    """The check must catch the conflict that broke installs: triton 3.9.0 beside torch 2.13.0."""
    bad = Path(tmp) / "requirements-conflict.txt"
    bad.write_text("torch==2.13.0\ntriton==3.9.0\n")
    rc, err, _ = compile_lock(uv, bad, TARGETS[0][1], PYTHONS[0], tmp)
    if rc == 0 or "triton" not in err:
        raise SystemExit("self-test: a triton pin that conflicts with torch's resolved anyway; "
                         f"the check cannot be trusted (uv said: {err.strip()[:500]})")
    print(f"self-test: the known conflict is caught ({_cause(err)[:110]}...)")
    base, pins = {"jupyterlab": ("4.6.6", 0)}, {"nbgrader": ("0.9.6", None)}
    caught = check_on_top("requirements-grading.txt", pins, base, {
        "jupyterlab": ("4.5.0", 0), "nbgrader": ("0.9.6", 0), "alembic": ("1.0", 0)})
    if len(caught) != 2:
        raise SystemExit(f"self-test: the check of the files on top of requirements.txt missed "
                         f"a moved or unpinned package: {caught}")
    print("self-test: the check of the files on top (grading, hub) catches a moved version and "
          "an unpinned addition")


def _cause(stderr):
    lines = [l.strip() for l in stderr.splitlines() if l.strip() and not l.startswith("WARNING")]
    cause = [l for l in lines if l.startswith(("cause:", "Because", "And because", "hint:"))]
    return " ".join(cause or lines)


def _failed(errors):
    return "".join(f"\n  FAILED: {e}" for e in errors)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uv", default="uv", help="the uv executable (make check-pins pins it)")
    ap.add_argument("--requirements", default=str(ROOT / "requirements.txt"))
    for option, layer in ON_TOP.items():
        where = f"on {', '.join(layer.platforms)} only" if layer.platforms else "everywhere"
        under = " + ".join(f"--{o or 'requirements'}" for o in stack(option)[:-1])
        ap.add_argument(f"--{option}", default=str(layer.path),
                        help=f"the {option} environment's pins, resolved on top of {under} "
                             f"({where})")
    ap.add_argument("--with-cuda", action="store_true",
                    help="resolve Linux without the overrides (sizes include the CUDA libraries)")
    args = ap.parse_args(argv)
    version = subprocess.run([args.uv, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"resolver: {version}; requirements: {os.path.relpath(args.requirements)}")
    pins = our_pins(args.requirements)
    paths = {None: args.requirements, **{o: getattr(args, o) for o in ON_TOP}}
    name = {o: os.path.basename(p) for o, p in paths.items()}
    order = sorted(ON_TOP, key=lambda o: len(stack(o)))  # each layer after the one it is on
    # {option: (its pins, its table's rows)}
    on_top = {o: (our_pins(paths[o]), []) for o in order}
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        layered = {}  # {option: a requirements file naming requirements.txt, the layers up to it}
        for i, option in enumerate(order):
            layered[option] = Path(tmp) / f"requirements-layered-{i}.txt"
            layered[option].write_text("".join(f"-r {Path(paths[o]).resolve()}\n"
                                               for o in stack(option)))
        self_test(args.uv, tmp)
        print(f"\n| platform | Python | profile | packages | download MB |\n|---|---|---|---|---|")
        for label, platform, key in TARGETS:
            for python in PYTHONS:
                rc, err, resolved = compile_lock(args.uv, args.requirements, platform, python, tmp,
                                                 overrides=not args.with_cuda)
                if rc != 0:
                    failures += 1
                    print(f"| {label} | {python} | FAILED: {_cause(err)} | | |")
                else:
                    errors = check(pins, resolved, key, python, overrides=not args.with_cuda)
                    failures += bool(errors)
                    missing = [p for p in runtime.OPTIONAL if p not in resolved]
                    profile = "full" if not missing else "without " + " and ".join(missing)
                    size = sum(s for _, s in resolved.values()) / 1e6
                    cuda = "" if args.with_cuda or key[0] != "linux" else " + CUDA libraries"
                    print(f"| {label} | {python} | {profile} | {len(resolved)} | "
                          f"{size:,.0f}{cuda} |" + _failed(errors))
                # {layer: its resolution here, or None where it failed}
                resolutions = {None: resolved if rc == 0 else None}
                for option in [o for o in order if o in on_top_for(key)]:
                    below = ON_TOP[option].on
                    base, combined = resolutions.get(below), {}
                    if base is None:
                        gerrors = [f"{name[option]}: not resolved: it is installed on top of "
                                   f"{name[below]}, which did not resolve here (above)"]
                    else:
                        grc, gerr, combined = compile_lock(args.uv, layered[option], platform,
                                                           python, tmp,
                                                           overrides=not args.with_cuda)
                        gerrors = ([f"{name[option]}: {_cause(gerr)}"] if grc else check_on_top(
                            name[option], on_top[option][0], base, combined, name[below]))
                        resolutions[option] = None if grc else combined
                    failures += bool(gerrors)
                    added = sum(s for n, (_, s) in combined.items() if n not in (base or {})) / 1e6
                    on_top[option][1].append(
                        f"| {label} | {python} | "
                        f"{'FAILED' if gerrors else len(combined) - len(base)} | "
                        f"{added:,.1f} |" + _failed(gerrors))
        for option, (_, rows) in on_top.items():
            under = " + ".join(name[o] for o in stack(option)[:-1])
            print(f"\n{os.path.relpath(paths[option])} on top of {under}{ON_TOP[option].note}:\n\n"
                  f"| platform | Python | packages added | download MB |\n|---|---|---|---|")
            print("\n".join(rows))
    if failures:
        print(f"\ncheck-pins: {failures} resolution(s) failed (above)")
        return 1
    counts = ", ".join(f"{name[o]} with {' and '.join(['it'] + [name[b] for b in stack(o)[1:-1]])}"
                       f" on {len(rows)}" for o, (_, rows) in on_top.items())
    print(f"\ncheck-pins: requirements.txt resolves on all {len(TARGETS) * len(PYTHONS)} "
          f"platform/Python combinations, {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
