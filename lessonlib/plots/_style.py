"""Colours shared by every figure: the Okabe & Ito (2008) "Color Universal Design" palette,
safe for colour-blind readers. Series also differ by line style or marker, so figures read in
grey print."""

__all__ = ["PALETTE", "series_styles", "STYLES"]

PALETTE = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
           "purple": "#CC79A7", "sky": "#56B4E9", "black": "#000000", "grey": "#999999",
           "yellow": "#F0E442"}

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
