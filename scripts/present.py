"""Serve one notebook as an app for a live demo: its widgets only, large type, on 127.0.0.1.

    make present NB=08_rope_scaling
    .venv/bin/python scripts/present.py 08_rope_scaling [--port 8866] [--token T]

Voila runs the notebook top to bottom in a fresh kernel as soon as it starts (a pre-heated
kernel: a page opened once that run is over, about 10 s after start on 2 cores, shows its
figures in a few seconds; a reload takes the next kernel, heated as the page opens). The page
shows what a room needs: no code (``strip_sources``), no prose or printed output, the sliders,
figures and readouts in large type (the ``presenter`` template in presenter/voila/templates/,
found through JUPYTER_PATH; figures at 130 dpi through presenter/matplotlibrc). It listens on
127.0.0.1 only, behind a token, and prints the URL to open. Ctrl-C stops it and its kernels.

tests/browser/test_present.py starts Voila through this script, so what the test checks is what
an instructor runs.
"""
import argparse
import os
import secrets
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESENTER = ROOT / "presenter"
TEMPLATE = "presenter"  # presenter/voila/templates/presenter/
PREHEATED = "Kernel pool of"  # Voila's log line once the kernel has started (the run goes on)
# Voila heats the next kernel (for a reload) this long after a page takes one: at once, so that
# its run of the notebook overlaps the page's loading (first figures in 3-5.5 s on 2 cores,
# against 2-3 s with 5 s of delay) and is over before the demo's first key presses
FILL_DELAY_S = 0


def notebook_path(name):
    """``08_rope_scaling``, ``08_rope_scaling.ipynb`` or a path -> an existing notebook."""
    candidates = [Path(name)]
    if not name.endswith(".ipynb"):
        candidates.append(Path(name + ".ipynb"))
    candidates += [ROOT / "notebooks" / c.name for c in candidates]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise SystemExit(f"present: no notebook {name!r} here or in notebooks/ "
                     "(try: make present NB=08_rope_scaling)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def presenter_url(port, token):
    return f"http://127.0.0.1:{port}/?token={token}"


def voila_command(notebook, port, token):
    """The Voila command line: one notebook, loopback only, a token, the presenter template."""
    return [sys.executable, "-m", "voila", str(notebook),
            "--no-browser", "--Voila.ip=127.0.0.1", f"--port={port}",
            "--Voila.port_retries=0",  # a taken port is an error, not a different URL
            f"--Voila.token={token}",
            f"--template={TEMPLATE}", "--strip_sources=True",
            # run the notebook in a kernel as the server starts, not when the page is opened
            # (PREHEATED is logged when that kernel has started); once a page has taken it,
            # Voila heats the next one for a reload FILL_DELAY_S later
            "--preheat_kernel=True", "--pool_size=1",
            f"--VoilaKernelManager.fill_delay={FILL_DELAY_S}"]


def voila_env(base=None):
    """The environment for Voila and its kernel: the presenter template and matplotlibrc, and
    lessonlib.runtime.PRESENTER_ENV (only widgets are shown: %%requires cells and the static
    pictures before the widgets are skipped)."""
    env = dict(os.environ if base is None else base)
    env["LESSONLIB_PRESENTER"] = "1"
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(PRESENTER), env.get("JUPYTER_PATH"))
                                          if p)
    env["MATPLOTLIBRC"] = str(PRESENTER / "matplotlibrc")
    env.pop("MPLBACKEND", None)  # the kernel draws with ipympl (%matplotlib widget)
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", help="08_rope_scaling, or a path to a .ipynb")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--token", default=None, help="default: a new random token")
    args = parser.parse_args(argv)
    notebook = notebook_path(args.notebook)
    port = args.port or free_port()
    token = args.token or secrets.token_hex(16)
    print(f"Presenting {notebook.name} (widgets only). The notebook runs now; open this URL in "
          f"about 10 seconds (Ctrl-C stops it):\n    {presenter_url(port, token)}", flush=True)
    cmd = voila_command(notebook, port, token)
    os.execve(cmd[0], cmd, voila_env())  # Voila replaces this process: signals reach it


if __name__ == "__main__":
    main()
