"""Colours shared by every figure: the Okabe & Ito (2008) "Color Universal Design" palette,
safe for colour-blind readers. Series also differ by line style or marker, so figures read in
grey print."""

__all__ = ["PALETTE"]

PALETTE = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
           "purple": "#CC79A7", "sky": "#56B4E9", "black": "#000000", "grey": "#999999",
           "yellow": "#F0E442"}
