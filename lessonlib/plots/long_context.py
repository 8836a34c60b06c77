"""draw(ax, data) functions for the notebooks: matplotlib only, no computation beyond formatting.

Each function draws onto an ``ax`` it is given and returns the artists a widget may update.
"""
import numpy as np

from ._style import text_colour_on

__all__ = ["draw_needle_heatmap"]


def draw_needle_heatmap(ax, result, *, title="Needle in a haystack: found (1) or missed (0)",
                        fontsize=9, unit="words"):
    """A ``needles.NeedleGrid`` as a heatmap: context length down, needle depth across.
    ``unit``: what the lengths count, "words" (``run_needle_grid`` without a tokenizer, as for
    notebook 09's stand-in model) or "tokens" (with one).

    Cells are coloured by the score (1 = found) and labelled ok / miss in black or white,
    whichever contrasts more with the cell (WCAG AA, at least 4.5:1); a colorbar sits
    beside the axes. Returns ``(image, colorbar)``.
    """
    found = np.asarray(result.found, dtype=float)  # (n_lengths, n_depths)
    image = ax.imshow(found, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(np.arange(len(result.depths)), [f"{d:g}%" for d in result.depths])
    ax.set_yticks(np.arange(len(result.lengths)), [f"{n:,}" for n in result.lengths])
    ax.set_xlabel("needle depth (0% = start of the context, 100% = end)")
    ax.set_ylabel(f"context length ({unit})")
    ax.set_title(title)
    for (i, j), f in np.ndenumerate(found):
        ax.text(j, i, "ok" if f else "miss", ha="center", va="center", fontsize=fontsize,
                color=text_colour_on(image.cmap(image.norm(f))),
                in_layout=False)  # inside its cell: the layout need not measure it
    colorbar = ax.figure.colorbar(image, ax=ax, ticks=[0, 1])
    colorbar.set_label("retrieved (1 = yes)")
    return image, colorbar
