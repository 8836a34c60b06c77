"""How a widget's figure reaches the page: every use of ipympl's and matplotlib's private API.

A key press on a slider costs, in the kernel, the redraw (compute, artists, readout), the Agg
draw of what changed and the PNG of the changed pixels; on the page, the frame's decode and
paint. The fast path below cuts each of those with knowledge of ipympl's and matplotlib's
insides that neither promises to keep. It lives here, in one module, under this contract.

The contract
------------
1. **A redraw is pure.** ``Explorer(controls, fig, redraw)`` calls ``redraw(**values)`` at
   settings no student chose: one step along each control when it is built (to find the texts a
   step changes, ``Explorer._texts_changed_at``), further away in ``Explorer.rehearse``, and in
   ``picture``, ``snapshot`` and ``readout_at``, each time followed by a call at the current
   setting. So the same values in give the same artists and the same readout (and data) out,
   whatever was called before: a redraw keeps no state between calls except through the
   artists it updates (no counter, no list it appends to, no random draw per call), and sets
   every artist property it changes at any setting, at every setting.
   ``tests/test_widgets_render.py`` holds every notebook widget to it.

2. **What the fast path relies on**, tested against matplotlib 3.11.2 and ipympl 0.10.0
   (``PINNED``, which ``tests/test_widgets_render.py`` holds equal to requirements.txt):

   - frames (``fast_frames``): an ipympl ``Canvas`` is matplotlib's ``FigureCanvasWebAggCore``:
     ``_png_is_old`` (a frame waits to be sent), ``_force_full`` (the next frame is full),
     ``_last_buff`` (the last frame sent, one uint32 per pixel), ``set_image_mode`` and
     ``get_renderer``; its ``get_diff_image`` (the frame ``manager.refresh_all`` sends) is
     replaced by one that encodes with ``png_rgba``, the same pixels and full/diff rule;
   - resent frames (``resend_current_frames``): its ``draw`` is replaced; ``_lastKey`` (Agg's
     ``(width, height, dpi)`` of the renderer last drawn into) and ``manager.refresh_all``;
   - drawing without sending (``draw_without_sending``): ``FigureCanvasAgg.draw(canvas)`` on a
     webagg canvas renders and sends nothing (webagg's ``draw`` is that plus
     ``refresh_all``), and ``canvas.blit`` sends what was drawn (``_png_is_old``,
     ``refresh_all``);
   - ipympl 0.10's first frame: ``syncing_data_url = False`` on the canvas (else its first
     image is synced as bare base64, which JupyterLab requests as a URL: a 0 x 0 figure);
   - text (``fast_text``): Agg's ``RendererAgg._prepare_font``, ``RendererAgg._renderer
     .draw_text_image``, ``FT2Font._layout`` (items with ``ft_object``, ``x``, ``y``,
     ``glyph_index``), ``FT2Font._set_transform``, ``FT2Font._render_glyph`` (a bitmap with
     ``buffer``, ``left``, ``top``), ``backend_agg.get_hinting_flag`` and ``RenderMode``,
     repeating ``RendererAgg._draw_text_glyphs_and_boxes`` for a plain string;
   - the page (``FRAMES_JS``): the front end's canvas model (jupyter-matplotlib 0.12.0, what
     ipympl 0.10.0 ships) has ``handle_binary(msg, buffers)``, ``offscreen_canvas``,
     ``offscreen_context``, ``waiting_for_image``, ``_for_each_view`` (views with
     ``update_canvas``), ``_image_mode`` and ``_data_url``; the page checks the functions and
     canvases before it replaces ``handle_binary``, and leaves ipympl's own where any is
     missing (a JupyterLab whose ipympl differs from the kernel's);
   - the front end's presence (``on_front_end``): ipympl's front end sends its canvas a
     message when it creates the canvas's model (``initialized``, ``refresh``; any counts).

3. **The check, and the plain path.** ``fast_path_ok()`` runs once, when the first widget
   figure is made (``new_figure``) or the first ``Explorer`` built: the installed matplotlib
   and ipympl must be the pinned versions and the private attributes above must exist (on a
   probe canvas and renderer, not on a widget). Where they do not, every widget takes the plain
   path, and one line on stderr says so once (``FALLBACK``, with what differs): figures drawn
   by ``canvas.draw_idle()`` (ipympl asks for the draw and sends its own frames), text drawn by
   matplotlib's own Agg renderer, no blitting and no page-side frame handler. Slower (a full
   draw and ipympl's encoder per step), the same pictures (``tests/test_widgets_render.py``
   moves every notebook widget both ways and compares the pixels). ``LESSONLIB_PLAIN_RENDER=1``
   in the environment chooses the plain path, without the line.

4. **Without ipympl's front end** (JupyterLab without the jupyter-matplotlib extension, VS
   Code offline, a hosted notebook): the ipympl canvas cannot render, so an Explorer also
   shows its frames in a core ``ipywidgets.Image`` (``Explorer.ui``). Until the canvas's front
   end speaks (``on_front_end``) each update puts the current frame there (``png_rgba`` of the
   canvas's buffer: 3-5 ms and 50-95 KB per step for the notebooks' 920-pixel figures on 2
   cores); from then on the Image is hidden and no longer updated, so where ipympl's front end
   is there a key press costs what it did. The page hides the Image as soon as ipympl's canvas
   element is there (``FIT_CSS``).
"""
import importlib.metadata
import math
import os
import struct
import sys
import zlib

import matplotlib
import numpy as np
from matplotlib import rcParams
from matplotlib.backends import backend_agg
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ft2font import FT2Font

__all__ = ["PINNED", "PLAIN_ENV", "FALLBACK", "fast_path_ok", "prepare_canvas", "fast_frames",
           "resend_current_frames", "draw_without_sending", "on_front_end", "png_rgba",
           "fast_text", "cache_sizes", "clear", "FRAMES_JS", "DATA_URL_DELAY_MS"]

PINNED = {"matplotlib": "3.11.2", "ipympl": "0.10.0"}  # what the fast path was tested against
PLAIN_ENV = "LESSONLIB_PLAIN_RENDER"  # "1": the plain path, chosen (no line printed)
FALLBACK = ("lessonlib.widgets: {why}; widgets draw the plain way (canvas.draw_idle, ipympl's "
            "own frames, matplotlib's own text): slower, the same pictures")

_VERDICT = None  # fast_path_ok's answer, once asked


# ------------------------------------------------------------------ the check

def fast_path_ok():
    """True when the fast path may run: the pinned matplotlib and ipympl, with the private
    attributes it uses, and no ``LESSONLIB_PLAIN_RENDER=1``. Decided once per process; where it
    is False for a reason other than the variable, ``FALLBACK`` is printed to stderr, once."""
    global _VERDICT
    if _VERDICT is None:
        if os.environ.get(PLAIN_ENV, "").strip() not in ("", "0"):
            _VERDICT = False
        else:
            why = _why_not_fast()
            _VERDICT = why is None
            if why is not None:
                print(FALLBACK.format(why=why), file=sys.stderr)
    return _VERDICT


def _installed(package):
    """The installed version of a package, or None; read from its metadata (importing ipympl
    would make it pyplot's backend)."""
    if package == "matplotlib":
        return matplotlib.__version__
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _why_not_fast():
    """Why the fast path cannot run here (versions, then missing private pieces), or None."""
    differ = [f"{name} {_installed(name) or 'not installed'}" for name, version in PINNED.items()
              if _installed(name) != version]
    if differ:
        tested = " and ".join(f"{name} {version}" for name, version in PINNED.items())
        return f"the fast path was tested with {tested}, this is {', '.join(differ)}"
    missing = _missing_private()
    if missing:
        return f"this matplotlib lacks {', '.join(missing)}, which the fast path uses"
    return None


def _missing_private():
    """The private attributes of the contract's list that this matplotlib lacks, looked for on
    the classes and on a probe canvas and renderer (one small figure, never shown)."""
    from matplotlib.backends.backend_webagg_core import (FigureCanvasWebAggCore,
                                                         FigureManagerWebAgg)
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties

    missing = []

    def need(obj, name, label):
        if not hasattr(obj, name):
            missing.append(f"{label}.{name}")

    for name in ("_prepare_font", "_draw_text_glyphs_and_boxes"):
        need(backend_agg.RendererAgg, name, "RendererAgg")
    for name in ("_layout", "_render_glyph", "_set_transform"):
        need(FT2Font, name, "FT2Font")
    for name in ("get_hinting_flag", "RenderMode"):
        need(backend_agg, name, "backend_agg")
    need(FigureCanvasAgg, "_lastKey", "FigureCanvasAgg")
    for name in ("set_image_mode", "get_diff_image", "get_renderer", "blit"):
        need(FigureCanvasWebAggCore, name, "FigureCanvasWebAggCore")
    need(FigureManagerWebAgg, "refresh_all", "FigureManagerWebAgg")
    if missing:
        return missing
    fig = Figure(figsize=(1, 1), dpi=20)
    try:
        probe = FigureCanvasWebAggCore(fig)
        for name in ("_png_is_old", "_force_full", "_last_buff"):
            need(probe, name, "FigureCanvasWebAggCore()")
        renderer = probe.get_renderer()
        if probe._lastKey != (*probe.get_width_height(physical=True), fig.dpi):
            missing.append("FigureCanvasAgg._lastKey as (width, height, dpi)")
        need(getattr(renderer, "_renderer", None), "draw_text_image", "RendererAgg._renderer")
        font = renderer._prepare_font(FontProperties(size=10))
        items = font._layout("x", flags=backend_agg.get_hinting_flag(), features=None,
                             language=None)
        for name in ("ft_object", "x", "y", "glyph_index"):
            need(items[0], name, "FT2Font._layout()[0]")
    except Exception as err:  # a private call with another signature: the plain path
        missing.append(f"a private call that works ({type(err).__name__}: {err})")
    return missing


def prepare_canvas(canvas, fast):
    """What every widget figure's canvas gets: on the fast path the kept glyphs, and on an
    ipympl canvas the fast frames and resent frames; on every ipympl canvas ipympl 0.10's
    first-frame fix (``syncing_data_url``; an ipympl without it ignores the attribute)."""
    if fast:
        fast_text(canvas)
    if hasattr(canvas, "syncing_data_url"):
        # Widgets draw before they are displayed; ipympl 0.10 then syncs that first image as
        # bare base64 without its data: prefix, JupyterLab requests it as a URL and the canvas
        # stays 0 x 0 (no figure at all). The browser tests catch this.
        canvas.syncing_data_url = False
    if fast:
        fast_frames(canvas)
        resend_current_frames(canvas)


# ------------------------------------------------------------------ frames

def fast_frames(canvas):
    """Encode the frames ipympl sends faster: unfiltered rows, zlib level 1 (``png_rgba``).

    Each slider step sends the changed pixels as a PNG (matplotlib's ``get_diff_image``: the
    pixels that differ from the last frame sent, the others transparent). Pillow's encoder
    (a filter chosen per row, zlib level 6) takes about as long as drawing a 920 x 440 frame;
    this takes about half of that. Same pixels, same full/diff rule: tests/test_widgets_render.py
    decodes both encoders' frames and compares them.
    """
    needed = ("_png_is_old", "_force_full", "_last_buff", "set_image_mode", "get_renderer")
    if not all(hasattr(canvas, a) for a in needed):
        return  # not a webagg-style canvas: nothing is sent as PNG

    def get_diff_image():
        if not canvas._png_is_old:
            return None
        pixels = np.asarray(canvas.get_renderer().buffer_rgba())
        buff = pixels.view(np.uint32).squeeze(2)  # one uint32 per pixel: compared at once
        if (canvas._force_full or buff.shape != canvas._last_buff.shape
                or (pixels[:, :, 3] != 255).any()):  # transparency cannot be overlaid
            canvas.set_image_mode("full")
            output = buff
        else:
            canvas.set_image_mode("diff")
            output = np.where(buff != canvas._last_buff, buff, 0)
        canvas._last_buff = buff.copy()
        canvas._force_full = False
        canvas._png_is_old = False
        return png_rgba(output.view(np.uint8).reshape((*output.shape, 4)))

    canvas.get_diff_image = get_diff_image


def resend_current_frames(canvas):
    """Answer a browser's request for a full frame with the frame already drawn, when nothing
    has changed since it was drawn.

    ipympl asks for a full draw when a view opens (its "refresh", twice per figure when
    Voila opens a page) and whenever the figure is stale after a kernel message (pyplot's
    ``draw_all`` runs after every widget message). ``Explorer`` leaves the figure's complete
    current frame in the canvas's buffer after each update and marks the figure fresh, so a
    full draw there would render the same pixels again: a fifth of a second per figure on
    notebook 10, while the next key press waits. A stale figure, or one whose size or dpi
    changed since its last frame, is drawn in full as before.
    """
    if not (hasattr(canvas, "manager") and hasattr(canvas, "_png_is_old")):
        return  # not a webagg-style canvas: its draws send nothing anywhere
    full_draw = canvas.draw

    def draw():
        fig = canvas.figure
        size = (*canvas.get_width_height(physical=True), fig.dpi)
        if fig.stale or getattr(canvas, "_lastKey", None) != size or canvas.manager is None:
            return full_draw()
        canvas._png_is_old = True  # the buffer holds the frame: send it (full or diff)
        canvas.manager.refresh_all()

    canvas.draw = draw


def draw_without_sending(canvas):
    """Draw the whole figure into the canvas's Agg buffer and send nothing (an ipympl canvas's
    ``draw`` also sends the frame; ``canvas.blit`` sends it later)."""
    FigureCanvasAgg.draw(canvas)


def on_front_end(canvas, callback):
    """Call ``callback()`` once, when the front end of an ipympl canvas first sends it a
    message (ipympl's front end does as it creates the canvas's model): from then on ipympl
    draws the figure on the page. Uses ipywidgets' public ``on_msg`` (the listener stays: one
    removed while ipywidgets calls the listeners would make it skip the next one)."""
    heard = []

    def first_message(widget, content, buffers):
        if not heard:
            heard.append(content.get("type") if isinstance(content, dict) else content)
            callback()

    canvas.on_msg(first_message)


def png_rgba(rgba, level=1):
    """An (h, w, 4) uint8 array as a PNG: every row unfiltered (filter type 0), zlib ``level``.

    Pillow picks a filter per row, which costs more than the compression; a diff frame (mostly
    transparent zeros) compresses well without one. Rows of zeros above and below the rows that
    hold anything (in a diff frame, rows where nothing changed) are not compressed at all: the
    zlib stream there is a kept deflate block of zeros (``_zero_rows``), and only the rows
    between them go through zlib. Any PNG decoder reads it.
    """
    h, w, _ = rgba.shape
    rows = np.zeros((h, w * 4 + 1), np.uint8)  # a 0 (no filter) before each row
    rows[:, 1:] = rgba.reshape(h, w * 4)
    used = np.flatnonzero(rgba.reshape(h, w * 4).any(axis=1))
    top, bottom = (int(used[0]), int(used[-1]) + 1) if used.size else (h, h)
    band = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate: blocks, no header
    stream = b"".join([
        b"\x78\x01",  # zlib's header: deflate with a 32 KiB window
        _zero_rows(top, rows.shape[1]),
        band.compress(rows[top:bottom]) + band.flush(zlib.Z_SYNC_FLUSH),
        _zero_rows(h - bottom, rows.shape[1]),
        b"\x03\x00",  # an empty final block
        struct.pack(">I", zlib.adler32(rows) & 0xFFFFFFFF)])

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8 bits, RGBA, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream)
            + chunk(b"IEND", b""))


_ZERO_BLOCKS = {}  # (rows, row bytes) -> raw deflate blocks of that many zero bytes


def _zero_rows(n, stride):
    """Raw deflate blocks (byte-aligned, not final) that inflate to ``n * stride`` zeros: kept
    blocks for 1, 2, 4, ... rows, joined by the binary digits of ``n``."""
    parts, k = [], 1
    while n:
        if n & 1:
            key = (k, stride)
            if key not in _ZERO_BLOCKS:
                zeros = zlib.compressobj(9, zlib.DEFLATED, -15)
                _ZERO_BLOCKS[key] = zeros.compress(bytes(k * stride)) + \
                    zeros.flush(zlib.Z_SYNC_FLUSH)
            parts.append(_ZERO_BLOCKS[key])
        n, k = n >> 1, k << 1
    return b"".join(parts)


# ------------------------------------------------------------------ the page's frame handler

# ipympl's front end, on each frame it receives, (1) re-encodes its whole offscreen canvas with
# toDataURL (to keep the model's _data_url, the picture a saved widget state would hold),
# synchronously, before the new frame is drawn: 30-40 ms per 930 x 440 frame in headless
# Chromium on these machines; and (2) loads the frame through a blob URL into an <img>, which
# the browser decodes on the main thread when it is drawn. fastFrames replaces that canvas
# model's handle_binary: the frame is decoded by createImageBitmap (off the main thread), drawn
# in arrival order (full frames clear first, diff frames are drawn over the last, as ipympl
# does), and _data_url is set, to the frame now shown, once frames stop (DATA_URL_DELAY_MS).
# Where the comm is not live (a saved state) or the browser has no createImageBitmap, ipympl's
# own path runs, its encode still deferred; where the model lacks what this uses (another
# ipympl on the page), nothing is replaced. The box's data-lessonlib-frames attribute says the
# handler is installed, data-lessonlib-decoded counts the frames it decoded and
# data-lessonlib-data-urls the deferred encodes (the browser tests read all three). ipympl
# redraws its <img> only after a resize, which the kernel follows with a full frame.
DATA_URL_DELAY_MS = 500
FRAMES_JS = """
function count(box, key) {
  box.dataset[key] = String(Number(box.dataset[key] || 0) + 1);
}
function fastFrames(canvas, box) {
  if (typeof canvas.handle_binary !== 'function' || typeof canvas._for_each_view !== 'function'
      || !canvas.offscreen_canvas || !canvas.offscreen_context) return;
  if (!canvas.__lessonlibFrames) {
    canvas.__lessonlibFrames = true;
    const ipympl = canvas.handle_binary;
    let timer = null, queue = Promise.resolve();
    const keepDataUrl = (model) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        model.set('_data_url', model.offscreen_canvas.toDataURL());
        count(box, 'lessonlibDataUrls');
      }, DATA_URL_DELAY_MS);
    };
    const ipymplDeferred = (model, msg, buffers) => {
      const offscreen = model.offscreen_canvas;
      const kept = model.get('_data_url');
      offscreen.toDataURL = () => kept;  // for this call only: no encode before the draw
      try { ipympl.call(model, msg, buffers); } finally { delete offscreen.toDataURL; }
      keepDataUrl(model);
    };
    canvas.handle_binary = function (msg, buffers) {
      if (this.disabled || typeof createImageBitmap !== 'function') {
        return ipymplDeferred(this, msg, buffers);
      }
      const data = buffers[0];
      const bytes = ArrayBuffer.isView(data)
        ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
      const full = this.get('_image_mode') === 'full';  // set by the message before the frame
      const decoded = createImageBitmap(new Blob([bytes], {type: 'image/png'}));
      this.waiting_for_image = false;
      queue = queue.then(() => decoded).then((bitmap) => {
        const offscreen = this.offscreen_canvas, context = this.offscreen_context;
        if (full) context.clearRect(0, 0, offscreen.width, offscreen.height);
        context.drawImage(bitmap, 0, 0);
        bitmap.close();
        this._for_each_view((view) => view.update_canvas());
        count(box, 'lessonlibDecoded');
        keepDataUrl(this);
      }, () => ipymplDeferred(this, msg, buffers));  // a frame it cannot decode: ipympl's path
    };
  }
  box.dataset.lessonlibFrames = 'decoded-off-thread';
}
""".replace("DATA_URL_DELAY_MS", str(DATA_URL_DELAY_MS))


# ------------------------------------------------------------------ text with kept glyphs
# A slider step redraws the texts that change (titles and notes with numbers in them), and text
# is the largest part of a step's draw: matplotlib 3.11's Agg renderer lays each string out
# (FT2Font._layout) and then, glyph by glyph in Python, sets the font's size and transform, has
# FreeType render the glyph and blends it in. The same strings and glyphs come back on every
# step (the digits of a number, a title's words, at the same places), so fast_text keeps:
# - each string's layout, by font, size, dpi, string, hinting, features and language;
# - each glyph's image, by font, size, dpi, glyph, angle and the pen's position within its
#   pixel (in FreeType's 1/64 px): a glyph at another whole-pixel position is the same image
#   moved,
# and blends the kept images exactly as matplotlib does, one glyph at a time, so the pixels are
# the same as without it (tests/test_widgets_glyphs.py draws every notebook widget both ways
# and compares every pixel). Mathtext and TeX are drawn by matplotlib as before.

_LAYOUTS = {}  # (font, size, dpi, text, flags, features, language) -> (font, layout items)
_GLYPHS = {}  # (font, size, dpi, glyph, angle, x % 64, y % 64, aa, flags, hinting) -> image
_TRANSFORMS = {}  # angle -> FreeType's 16.16 matrix, as matplotlib computes it
_MOST = 20_000  # entries of each cache; past that it starts again (a long session's new numbers)


def cache_sizes():
    """How many layouts and glyph images are kept (tests read it)."""
    return {"layouts": len(_LAYOUTS), "glyphs": len(_GLYPHS)}


def clear():
    """Forget every kept layout and glyph image."""
    _LAYOUTS.clear()
    _GLYPHS.clear()


def fast_text(canvas):
    """Give every Agg renderer of ``canvas`` the kept layouts and glyph images for its text
    (call it only where ``fast_path_ok()``)."""
    if not hasattr(canvas, "get_renderer"):
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
