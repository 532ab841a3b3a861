"""What the tests read back from ddp-plot's pictures: the PNG's size from its header and its pixels,
and from the SVG (text kept as text, groups named by ddp-plot: panel-<name>, line-<series>-<run>)
each panel's tick labels with their positions and each curve's points, mapped back into data
coordinates through the ticks. A curve that matches the data this way was drawn from the data on
axes made for it."""
import re
import struct
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError("%s is no PNG (starts %r)" % (path, head[:16]))
    return struct.unpack(">II", head[16:24])


def png_variety(path):
    """(distinct colours, fraction of pixels that are not white)."""
    import matplotlib.image
    import numpy
    pixels = matplotlib.image.imread(path)[:, :, :3]
    flat = (pixels.reshape(-1, 3) * 255).round().astype(numpy.uint8)
    colours = len(numpy.unique(flat, axis=0))
    not_white = float((flat.min(axis=1) < 250).mean())
    return colours, not_white


def _number(text):
    return float(text.replace("\u2212", "-"))


class Svg:
    def __init__(self, path):
        self.root = ET.parse(path).getroot()
        self.by_id = {g.get("id"): g for g in self.root.iter(SVG + "g") if g.get("id")}

    def panels(self):
        return sorted(i[len("panel-"):] for i in self.by_id if i.startswith("panel-"))

    def ticks(self, panel, axis):
        """[(label value, pixel position)] of the panel's x or y axis ticks."""
        out = []
        group = self.by_id["panel-" + panel]
        for tick in group.iter(SVG + "g"):
            if not re.fullmatch(axis + r"tick_\d+", tick.get("id") or ""):
                continue
            texts = [t for t in tick.iter(SVG + "text")]
            marks = [u for u in tick.iter(SVG + "use")]
            if not texts or not marks:
                continue
            out.append((_number("".join(texts[0].itertext())), float(marks[0].get(axis))))
        return out

    def line(self, gid):
        """The (x, y) pixel vertices of the curve group `gid`, or None when there is none."""
        group = self.by_id.get(gid)
        if group is None:
            return None
        path = group.find(SVG + "path")
        numbers = [float(v) for v in re.findall(r"-?[\d.]+(?:e-?\d+)?", path.get("d"))]
        return list(zip(numbers[0::2], numbers[1::2]))

    def line_data(self, panel, gid):
        """The curve's vertices in data coordinates, through the panel's tick labels; raises when the
        ticks are not one linear scale (then the labels do not describe the axis)."""
        vertices = self.line(gid)
        if vertices is None:
            raise AssertionError("no curve %s in the SVG" % gid)
        fx = _scale(self.ticks(panel, "x"), panel + " x")
        fy = _scale(self.ticks(panel, "y"), panel + " y")
        return [(fx(x), fy(y)) for x, y in vertices]

    def texts(self):
        return ["".join(t.itertext()) for t in self.root.iter(SVG + "text")]


def _scale(ticks, what):
    """pixel -> value, fitted through two ticks and checked against all of them."""
    if len(ticks) < 2:
        raise AssertionError("%s: %d tick labels" % (what, len(ticks)))
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    if p0 == p1:
        raise AssertionError("%s: ticks %r at one position" % (what, ticks))
    per_pixel = (v1 - v0) / (p1 - p0)
    for v, p in ticks:
        if abs(v0 + (p - p0) * per_pixel - v) > 1e-6 * max(1.0, abs(v)) + abs(per_pixel) * 0.01:
            raise AssertionError("%s: tick %r at %r is off the scale of %r" % (what, v, p, ticks))
    return lambda p: v0 + (p - p0) * per_pixel
