"""Text drawn by a widget's figure, with its layouts and glyph images kept between frames.

A slider step redraws the texts that change (titles and notes with numbers in them), and text
is the largest part of a step's draw: matplotlib 3.11's Agg renderer lays each string out
(``FT2Font._layout``) and then, glyph by glyph in Python, sets the font's size and transform,
has FreeType render the glyph and blends it in. The same strings and glyphs come back on every
step (the digits of a number, a title's words, at the same places), so ``fast_text`` keeps:

- each string's layout, by font, size, dpi, string, hinting, features and language;
- each glyph's image, by font, size, dpi, glyph, angle and the pen's position within its pixel
  (in FreeType's 1/64 px): a glyph at another whole-pixel position is the same image moved.

and blends the kept images exactly as matplotlib does, one glyph at a time, so the pixels are
the same as without it (tests/test_widgets_glyphs.py draws every notebook widget both ways and
compares every pixel). Mathtext and TeX are drawn by matplotlib as before. Where matplotlib's
renderer lacks the private pieces this repeats (another matplotlib version), ``fast_text``
leaves the canvas alone.
"""
import math

import numpy as np
from matplotlib import rcParams
from matplotlib.backends import backend_agg
from matplotlib.ft2font import FT2Font

__all__ = ["fast_text", "supported", "cache_sizes", "clear"]

_LAYOUTS = {}  # (font, size, dpi, text, flags, features, language) -> (font, layout items)
_GLYPHS = {}  # (font, size, dpi, glyph, angle, x % 64, y % 64, aa, flags, hinting) -> image
_TRANSFORMS = {}  # angle -> FreeType's 16.16 matrix, as matplotlib computes it
_MOST = 20_000  # entries of each cache; past that it starts again (a long session's new numbers)


def supported():
    """True when this matplotlib draws text the way ``fast_text`` repeats (3.11's Agg)."""
    return (hasattr(backend_agg.RendererAgg, "_draw_text_glyphs_and_boxes")
            and hasattr(backend_agg.RendererAgg, "_prepare_font")
            and all(hasattr(FT2Font, a) for a in ("_layout", "_render_glyph", "_set_transform"))
            and hasattr(backend_agg, "get_hinting_flag") and hasattr(backend_agg, "RenderMode"))


def cache_sizes():
    """How many layouts and glyph images are kept (tests read it)."""
    return {"layouts": len(_LAYOUTS), "glyphs": len(_GLYPHS)}


def clear():
    """Forget every kept layout and glyph image."""
    _LAYOUTS.clear()
    _GLYPHS.clear()


def fast_text(canvas):
    """Give every Agg renderer of ``canvas`` the kept layouts and glyph images for its text."""
    if not supported() or not hasattr(canvas, "get_renderer"):
        return
    get_renderer = canvas.get_renderer

    def renderer_with_fast_text():
        renderer = get_renderer()
        if getattr(renderer, "_lessonlib_fast_text", None) is not renderer:
            renderer.draw_text = _draw_text.__get__(renderer)
            renderer._lessonlib_fast_text = renderer
        return renderer

    canvas.get_renderer = renderer_with_fast_text


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
    """RendererAgg.draw_text with kept layouts and glyph images (the same pixels)."""
    if ismath:
        return backend_agg.RendererAgg.draw_text(self, gc, x, y, s, prop, angle, ismath, mtext)
    font = self._prepare_font(prop)
    flags = backend_agg.get_hinting_flag()
    features = mtext.get_fontfeatures() if mtext is not None else None
    language = mtext.get_language() if mtext is not None else None
    size = prop.get_size_in_points()
    key = (id(font), size, self.dpi, s, flags, _hashable(features), _hashable(language))
    try:
        kept = _LAYOUTS.get(key)
    except TypeError:  # a feature or language matplotlib accepts but we cannot key on
        return backend_agg.RendererAgg.draw_text(self, gc, x, y, s, prop, angle, ismath, mtext)
    if kept is None:
        if len(_LAYOUTS) >= _MOST:
            _LAYOUTS.clear()
        # the font is kept with its layout: its id cannot name another font while it is here
        kept = _LAYOUTS[key] = (font, tuple(font._layout(s, flags=flags, features=features,
                                                         language=language)))
    _draw_glyphs(self, gc, x, y, angle, size, kept[1], flags)


def _transform(angle):
    """The glyph transform matplotlib gives a plain string (no slant, no extension)."""
    matrix = _TRANSFORMS.get(angle)
    if matrix is None:
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        matrix = _TRANSFORMS[angle] = (0x10000 * np.array([[cos, -sin], [sin, cos]])
                                       ).round().astype(int)
    return matrix


def _draw_glyphs(self, gc, x, y, angle, size, items, flags):
    """matplotlib's _draw_text_glyphs_and_boxes for a plain string (no boxes), each glyph's
    image rendered once per position within a pixel."""
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    antialiased = gc.get_antialiased()
    hinting = rcParams["text.hinting_factor"]
    height, dpi = self.height, self.dpi
    for item in items:
        font, dx, dy = item.ft_object, item.x, item.y  # dy is upwards
        px = round(0x40 * (x + dx * cos - dy * sin))
        py = round(0x40 * (height - y + dx * sin + dy * cos))  # FreeType's y is upwards
        key = (id(font), size, dpi, item.glyph_index, angle, px & 0x3F, py & 0x3F,
               antialiased, flags, hinting)
        image = _GLYPHS.get(key)
        if image is None:
            font.set_size(size, dpi)
            font._set_transform(_transform(angle), [px, py])
            bitmap = font._render_glyph(
                item.glyph_index, flags,
                backend_agg.RenderMode.NORMAL if antialiased else backend_agg.RenderMode.MONO)
            buffer = np.array(bitmap.buffer)
            if not antialiased:
                buffer *= 0xff
            if len(_GLYPHS) >= _MOST:
                _GLYPHS.clear()
            image = _GLYPHS[key] = (buffer, bitmap.left - (px >> 6), bitmap.top - (py >> 6),
                                    font)  # the font kept: its id names only it
        buffer, left, top, _ = image
        # draw_text_image's y is downwards & the bitmap's bottom side
        self._renderer.draw_text_image(
            buffer, left + (px >> 6), int(height) - (top + (py >> 6)) + buffer.shape[0], 0, gc)
