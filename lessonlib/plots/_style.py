"""Colours shared by every figure: the Okabe & Ito (2008) "Color Universal Design" palette,
safe for colour-blind readers. Series also differ by line style or marker, so figures read in
grey print."""

__all__ = ["PALETTE", "series_styles", "STYLES", "FIGURE_WIDTH"]

# Every widget's figure width, in inches: 920 px at JupyterLab's 100 dpi fits the output area
# beside the file browser (about 930 px) unscaled, 1,196 px at the presenter's 130 dpi.
FIGURE_WIDTH = 9.2
"""9.2, every widget's figure width in inches: 920 px at JupyterLab's 100 dpi, inside the
~930 px output area beside the file browser (1,196 px at the presenter's 130 dpi). The one
copy: the widgets import it."""

PALETTE = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
           "purple": "#CC79A7", "sky": "#56B4E9", "black": "#000000", "grey": "#999999",
           "yellow": "#F0E442"}
"""The figures' colours by role name: Okabe & Ito's colour-blind-safe palette."""

# Line style and marker of the 1st, 2nd, ... series: they tell series apart without colour.
_LINES_AND_MARKERS = [("-", "o"), ("--", "s"), ("-.", "^"), (":", "D"), ((0, (5, 1, 1, 1)), "v"),
                      ((0, (1, 1)), "P")]


def series_styles(colours):
    """Series styles in order, one per palette colour name: ``dict(color, linestyle, marker)``."""
    if len(colours) > len(_LINES_AND_MARKERS):
        raise ValueError(f"at most {len(_LINES_AND_MARKERS)} series styles, got {len(colours)} colours")
    return [dict(color=PALETTE[c], linestyle=ls, marker=m)
            for c, (ls, m) in zip(colours, _LINES_AND_MARKERS)]


STYLES = series_styles(["blue", "vermillion", "green", "purple", "orange", "black"])
"""The curves' styles (colour, line style, marker), in order: series 1, 2, ..."""


# ------------------------------------------------------------------ text on a coloured cell
# WCAG 2 contrast: a label drawn on a heatmap's cell is black or white, whichever contrasts
# more with the cell's colour; either choice reaches at least 4.58:1 (AA asks 4.5:1 for text).

def relative_luminance(colour):
    """WCAG 2 relative luminance (0 black .. 1 white) of a matplotlib colour."""
    from matplotlib.colors import to_rgb

    def linear(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(foreground, background):
    """WCAG 2 contrast ratio of two colours, 1 (none) .. 21 (black on white)."""
    hi, lo = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_colour_on(background):
    """Black or white: the text colour that contrasts more with ``background``."""
    black, white = contrast_ratio("black", background), contrast_ratio("white", background)
    return "black" if black >= white else "white"


__all__ += ["relative_luminance", "contrast_ratio", "text_colour_on"]
