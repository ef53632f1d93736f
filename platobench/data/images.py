"""Reading the image files of users' datasets safely: every failure is a one-line UserError naming the file.

`check_image` runs on every image when a datasets-file dataset is built (at plan time, before any model
runs, and in `platobench data show`, `--no-image-check` or not). It refuses a file of 0 bytes, one that is
not an image, one over `MAX_PIXELS` (a decompression bomb: kilobytes that decode to gigabytes) and one cut
short, at about the cost of reading the file: a PNG's chunks are walked with their checksums (Pillow's
`verify`), a JPEG's segments and scans up to its end-of-image marker (`_jpeg_end`), both without decoding;
an image in any other format is decoded. `open_image` decodes an image for a model and names the file when
that fails (a file replaced after the check).
"""

from __future__ import annotations

import io
import struct
import warnings
from pathlib import Path

from PIL import Image

from platobench.errors import UserError

#: The most pixels an image may have: 256 MiB as 8-bit RGB (Pillow's own warning threshold), so that one
#: sample never decodes to more than that, whatever its file size.
MAX_PIXELS = (256 << 20) // 3

#: What Pillow raises for a file it cannot read (it also raises SyntaxError and struct.error on malformed
#: headers, and DecompressionBombError over twice its own threshold).
DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, struct.error,
                 Image.DecompressionBombError, Image.DecompressionBombWarning)

Source = Path | bytes


def _open(source: Source) -> Image.Image:
    """`source` opened (the header read), with Pillow's bomb warning raised as an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        return Image.open(source if isinstance(source, Path) else io.BytesIO(source))


def _bounded(image: Image.Image) -> Image.Image:
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise ValueError(f"{width}x{height} pixels, over the bound of {MAX_PIXELS:,}")
    return image


def _refused(where: str, exc: BaseException) -> UserError:
    """The UserError of an image that `where` names and Pillow could not read (`exc`'s first line)."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return UserError(f"{where} is not a readable image ({reason})")


def _scan_end(data: bytes, pos: int) -> int:
    """Where the entropy-coded data of a JPEG scan starting at `pos` ends: the first 0xFF that starts a
    marker (not a stuffed 0xFF 0x00, a restart marker or a fill byte); len(data) when none does."""
    while (pos := data.find(b"\xff", pos)) != -1 and pos + 1 < len(data):
        code = data[pos + 1]
        if code not in (0x00, 0xFF) and not 0xD0 <= code <= 0xD7:
            return pos
        pos += 1 if code == 0xFF else 2
    return len(data)


def _jpeg_end(data: bytes) -> None:
    """ValueError unless the JPEG's segments (each with its length) and scans run to an end-of-image marker;
    bytes between segments are skipped, as decoders skip them, and bytes after the marker are ignored."""
    pos = 2  # after the start-of-image marker
    while (pos := data.find(b"\xff", pos)) != -1 and pos + 1 < len(data):
        code = data[pos + 1]
        if code == 0xD9:
            return
        if code == 0xFF or code == 0x01 or 0xD0 <= code <= 0xD7:  # a fill byte, TEM, a restart: no length
            pos += 1 if code == 0xFF else 2
            continue
        pos += 2 + int.from_bytes(data[pos + 2:pos + 4], "big")
        if code == 0xDA:  # start of scan: its entropy-coded data follows the header
            pos = _scan_end(data, pos)
    raise ValueError("cut short: no end-of-image marker")


def check_image(source: Source, where: str) -> None:
    """UserError "`where` is not a readable image (why)" unless `source` (a file or its bytes) is a whole
    image of at most MAX_PIXELS: a PNG's chunks and a JPEG's segments are walked, other formats decoded."""
    data = source.read_bytes() if isinstance(source, Path) else source
    if not data:
        raise UserError(f"{where} is not a readable image (0 bytes)")
    try:
        with _open(data) as image:
            if _bounded(image).format == "PNG":
                image.verify()
            elif image.format in ("JPEG", "MPO"):
                _jpeg_end(data)
            else:
                image.load()
    except DECODE_ERRORS as exc:
        raise _refused(where, exc) from exc


def open_image(source: Source, where: str) -> Image.Image:
    """`source` (a file or its bytes) decoded; UserError "`where` is not a readable image (why)" for a file
    Pillow cannot decode, one cut short, or one over MAX_PIXELS."""
    try:
        with _open(source) as image:
            _bounded(image).load()
            return image
    except DECODE_ERRORS as exc:
        raise _refused(where, exc) from exc
