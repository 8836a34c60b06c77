"""Execute notebooks in place so their committed outputs are fresh (nbval compares them).

    .venv/bin/python scripts/run_notebooks.py                 # every notebooks/NN_*.ipynb
    .venv/bin/python scripts/run_notebooks.py notebooks/02_online_softmax.ipynb

Runs each notebook top to bottom in a fresh kernel from this venv, with TRITON_INTERPRET=1 (no
GPU here) and without MPLBACKEND (inline and ipympl figures must keep their outputs), and saves
no widget state. Fails on the first cell error.
"""
import glob
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(path, timeout=600):
    nb = nbformat.read(path, as_version=4)
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ.pop("MPLBACKEND", None)
    # No widget state in the file: without a kernel a widget cannot draw its figure, so
    # viewers (nbconvert, nbviewer) show the picture each widget displays before itself.
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            store_widget_state=False,
                            resources={"metadata": {"path": os.path.dirname(path)}})
    t0 = time.perf_counter()
    client.execute()
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    return time.perf_counter() - t0


def main(paths):
    paths = paths or sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb")))
    for p in paths:
        print(f"{p}: {run(p):.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
