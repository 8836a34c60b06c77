"""lessonlib.plots: the needle heatmap draws the grid it is given (headless, MPLBACKEND=Agg)."""
import matplotlib.pyplot as plt
import numpy as np

from lessonlib.needles import EdgeHeavyModel, run_needle_grid
from lessonlib.plots import draw_needle_heatmap


def test_needle_heatmap_shows_the_grid_with_labels_and_colorbar():
    grid = run_needle_grid(EdgeHeavyModel(), [1000, 4000, 16000], [0, 25, 50, 75, 100],
                           progress=False)
    fig, ax = plt.subplots(layout="constrained")
    try:
        image, colorbar = draw_needle_heatmap(ax, grid)
        np.testing.assert_array_equal(image.get_array(), grid.found.astype(float))
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0%", "25%", "50%", "75%", "100%"]
        assert [t.get_text() for t in ax.get_yticklabels()] == ["1,000", "4,000", "16,000"]
        assert ax.get_title() and "depth" in ax.get_xlabel() and "length" in ax.get_ylabel()
        assert colorbar.ax in fig.axes and colorbar.ax.get_ylabel()
        cells = [t.get_text() for t in ax.texts]
        assert cells.count("miss") == int((~grid.found).sum()) and len(cells) == grid.found.size
        fig.canvas.draw()  # renders without error
    finally:
        plt.close(fig)


def test_needle_heatmap_counts_what_the_grid_counts():
    """Notebook 09's stand-in model counts words (no tokenizer); the axis once said tokens."""
    from lessonlib.widgets.long_context import needle_heatmap
    grid = run_needle_grid(EdgeHeavyModel(), [1000, 4000], [0, 50], progress=False)
    fig, ax = plt.subplots()
    try:
        draw_needle_heatmap(ax, grid)
        assert ax.get_ylabel() == "context length (words)"
        ax.clear()
        draw_needle_heatmap(ax, grid, unit="tokens")
        assert ax.get_ylabel() == "context length (tokens)"
    finally:
        plt.close(fig)
    w = needle_heatmap(grid)
    try:
        assert w.axes[0].get_ylabel() == "context length (words)"
    finally:
        plt.close(w.axes[0].figure)
