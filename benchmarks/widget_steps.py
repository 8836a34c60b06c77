"""The kernel's side of one slider step, for every slider of every notebook's widget.

    .venv/bin/python benchmarks/widget_steps.py [--steps 12]

A key press on a slider becomes, in the kernel: the callback (compute with lessonlib, update the
artists, format the readout), the blitted Agg draw of what changed, and the image ipympl sends
(the changed pixels as a PNG; its size is what travels to the browser). This prints each part's
median per slider, side by side in one run, with ipympl's own backend and no browser. What
happens after (messages, PNG decode, paint) is in the browser suite's key-press-to-pixels times
(tests/browser/test_fit.py writes latency.md); benchmarks/RESULTS.md records both.
"""
import argparse
import os
import statistics
import sys
import time

os.environ.pop("MPLBACKEND", None)
import matplotlib  # noqa: E402

matplotlib.use("module://ipympl.backend_nbagg")
import ipywidgets  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def factories():
    """Each notebook's widget, built as the notebook builds it (tests/_support.py's registry,
    which the widget tests use too), named by notebook."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "tests"))
    from _support import notebook_explorers
    numbers = {"memory": "01", "online_softmax": "02", "tiled": "03", "tile_map": "04",
               "kv_cache": "05", "budget": "05", "window": "06", "clock": "07", "scaling": "08",
               "cost": "09", "extension": "10"}
    return {f"{numbers[k]} {k}": make for k, make in notebook_explorers().items()}


def next_values(control, n):
    """The values n ArrowRight presses visit (back from the end when the track runs out)."""
    if isinstance(control, ipywidgets.SelectionSlider):
        values = [v for _, v in control.options] if isinstance(control.options[0], tuple) \
            else list(control.options)
        start = values.index(control.value)
        order = values[start + 1:] + values[:start + 1][::-1]
        return (order * (n // max(1, len(order)) + 1))[:n]
    step, lo, hi = control.step, control.min, control.max
    out, v, sign = [], control.value, 1
    for _ in range(n):
        if not lo <= v + sign * step <= hi:
            sign = -sign
        v = v + sign * step
        out.append(v)
    return out


def timed(explorer):
    """Wrap the callback, the draw and the PNG encoding of an Explorer to record their times
    (ms) and the PNG's size. ipympl encodes inside the draw (blit -> refresh_all ->
    get_diff_image, the changed pixels against the last frame sent): "draw" is what remains."""
    times = {"callback": [], "draw": [], "encode": [], "bytes": []}
    canvas = explorer.fig.canvas
    redraw, draw, diff_image = explorer._redraw, explorer._draw_changes, canvas.get_diff_image

    def timed_redraw(**values):
        t = time.perf_counter()
        out = redraw(**values)
        times["callback"].append(1e3 * (time.perf_counter() - t))
        return out

    def timed_diff_image():
        t = time.perf_counter()
        png = diff_image()
        times["encode"].append(1e3 * (time.perf_counter() - t))
        times["bytes"].append(len(png or b""))
        return png

    def timed_draw():
        encoded = len(times["encode"])
        t = time.perf_counter()
        draw()
        total = 1e3 * (time.perf_counter() - t)
        times["draw"].append(total - sum(times["encode"][encoded:]))

    def restore():
        explorer._redraw, explorer._draw_changes = redraw, draw
        del canvas.get_diff_image

    explorer._redraw, explorer._draw_changes = timed_redraw, timed_draw
    canvas.get_diff_image = timed_diff_image
    return times, restore


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=12, help="presses per slider")
    args = parser.parse_args(argv)
    print("| notebook widget | slider | figure px | callback ms | draw ms | encode ms | "
          "PNG bytes | kernel total ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, make in factories().items():
        explorer = make()
        canvas = explorer.fig.canvas
        width, height = (explorer.fig.get_size_inches() * explorer.fig.dpi).round().astype(int)
        for label, control in explorer.controls.items():
            if not isinstance(control, (ipywidgets.IntSlider, ipywidgets.FloatSlider,
                                        ipywidgets.SelectionSlider)) or control.disabled:
                continue
            start = control.value
            times, restore = timed(explorer)
            for value in next_values(control, args.steps):
                control.value = value
            restore()
            control.value = start
            cb, dr, en, size = (statistics.median(times[k]) if times[k] else 0.0
                                for k in ("callback", "draw", "encode", "bytes"))
            print(f"| {name} | {control.description} | {width}x{height} | {cb:.1f} | {dr:.1f} "
                  f"| {en:.1f} | {size:,.0f} | {cb + dr + en:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
