# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Camera messages to numpy images, without copies where the layout allows.

Works on the fields of sensor_msgs/Image and sensor_msgs/CompressedImage
(passed as plain values, so this module needs no ROS). Every problem raises
:class:`ImageError` with a one-line reason that the node logs as is.
"""

from dataclasses import dataclass

import cv2
import numpy as np

try:    # libjpeg-turbo that reports corrupt data instead of printing it (strict mode)
    import simplejpeg
except ImportError:     # pragma: no cover - a robot without it: cv2, which cannot tell
    simplejpeg = None

# Whether JPEG frames with corrupt entropy-coded data are rejected: cv2.imdecode
# decodes such data into a wrong image and only prints libjpeg's "Corrupt JPEG
# data: ..." on stderr; simplejpeg's strict mode raises.
JPEG_DETECTS_CORRUPTION = simplejpeg is not None

# encoding -> (channels, colour order of the channels). Colour order is what
# preprocessing needs to feed the model its own order in one pass.
ENCODINGS = {
    'rgb8': (3, 'rgb'),
    'bgr8': (3, 'bgr'),
    'rgba8': (4, 'rgb'),
    'bgra8': (4, 'bgr'),
    'mono8': (1, 'mono'),
}

_JPEG_SOI = b'\xff\xd8'
_JPEG_EOI = b'\xff\xd9'
_PNG_SIG = b'\x89PNG\r\n\x1a\n'
_PNG_IEND = b'IEND\xaeB`\x82'
# Some MJPEG cameras send bytes after the end-of-image marker (fill up to a
# buffer size: zeros or 0xFF, or a few others); libjpeg stops at the marker.
# Runs of fill are stepped over in chunks of this size, and the marker is
# looked for in this many bytes before the last other byte.
_JPEG_TAIL_SEARCH = 4096


class ImageError(ValueError):
    """A frame that cannot be turned into an image; the message says why."""


@dataclass
class Frame:
    """An image ready for preprocessing.

    ``pixels`` is H x W x C uint8 (C = 1, 3 or 4), possibly a strided view on
    the message buffer; ``color`` names the channel order ('rgb', 'bgr', 'mono').
    """

    pixels: np.ndarray
    color: str

    @property
    def width(self) -> int:
        """Image width in pixels."""
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        """Image height in pixels."""
        return int(self.pixels.shape[0])


def from_raw(encoding: str, height: int, width: int, step: int, data,
             is_bigendian: int = 0) -> Frame:
    """View a sensor_msgs/Image's buffer as an H x W x C array (no copy).

    Rows may be padded (step > width * channels); the view skips the padding.
    """
    enc = encoding.lower()
    if enc not in ENCODINGS:
        raise ImageError(
            f"unsupported encoding '{encoding}' (supported: {', '.join(ENCODINGS)})")
    channels, color = ENCODINGS[enc]
    if height <= 0 or width <= 0:
        raise ImageError(f'empty image: {width}x{height}')
    row = width * channels
    if step < row:
        raise ImageError(f'step {step} < width {width} x {channels} channels = {row}')
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size != step * height:
        raise ImageError(
            f'data size {buf.size} != step {step} x height {height} = {step * height}')
    pixels = buf.reshape(height, step)[:, :row].reshape(height, width, channels)
    return Frame(pixels, color)


def jpeg_end(buf: np.ndarray) -> int:
    """Return the length of the JPEG in ``buf`` up to its end-of-image marker; 0 if none.

    Trailing fill after the marker (zeros, 0xFF, or a few other bytes, as some
    MJPEG cameras send) is skipped: runs of 0x00 / 0xFF are stepped over, then
    the last FF D9 within 4 KiB before the last other byte is the marker.
    Entropy-coded data cannot hold FF D9 (a coded 0xFF is followed by 0x00),
    so a file cut in its scan has no marker there; one that has a marker glued
    to a cut scan is caught by the decoder (premature end of data).
    """
    end = buf.size
    if end >= 2 and buf[end - 1] == 0xD9 and buf[end - 2] == 0xFF:
        return end      # the usual case: the marker is the last two bytes
    while end > 0:      # step over fill bytes, a chunk at a time
        chunk = buf[max(0, end - _JPEG_TAIL_SEARCH):end]
        keep = np.flatnonzero((chunk != 0x00) & (chunk != 0xFF))
        if keep.size:
            end = end - chunk.size + int(keep[-1]) + 1
            break
        end -= chunk.size
    lo = max(0, end - _JPEG_TAIL_SEARCH)
    at = bytes(buf[lo:end]).rfind(_JPEG_EOI)
    return lo + at + 2 if at >= 0 else 0


def decode_jpeg(data) -> np.ndarray:
    """Decode a complete JPEG to BGR; ImageError if the decoder reports corrupt data."""
    if simplejpeg is None:
        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if img is None or img.size == 0:
            raise ImageError(f'corrupt JPEG ({len(data)} bytes): decoder returned nothing')
        return img
    try:
        return simplejpeg.decode_jpeg(data, colorspace='BGR', strict=True)
    except ValueError as exc:   # libjpeg's warnings and errors, one line
        why = str(exc).splitlines()[0] if str(exc) else 'decoder failed'
        if why.startswith('Corrupt JPEG data: '):
            why = why[len('Corrupt JPEG data: '):]
        raise ImageError(f'corrupt JPEG ({len(data)} bytes): {why}') from None


def from_compressed(fmt: str, data) -> Frame:
    """Decode a sensor_msgs/CompressedImage (jpeg or png) to a BGR frame.

    Truncated and corrupt files are rejected with the reason: libjpeg would
    otherwise return a partly grey or garbled image with only a warning on
    stderr (JPEG is decoded in simplejpeg's strict mode where it is installed).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size == 0:
        raise ImageError('empty compressed image')
    head = bytes(buf[:8])
    kind = fmt.lower()
    if head.startswith(_JPEG_SOI):
        end = jpeg_end(buf)
        if not end:
            raise ImageError(f'truncated JPEG ({buf.size} bytes, no end-of-image marker)')
    elif head.startswith(_PNG_SIG):
        if bytes(buf[-8:]) != _PNG_IEND:
            raise ImageError(f'truncated PNG ({buf.size} bytes, no IEND chunk)')
    else:
        raise ImageError(
            f"compressed image (format '{fmt}') is neither JPEG nor PNG "
            f'(first bytes {head[:4].hex()})')
    if kind and 'jpeg' not in kind and 'jpg' not in kind and 'png' not in kind:
        raise ImageError(f"unsupported compressed format '{fmt}' (supported: jpeg, png)")
    if head.startswith(_JPEG_SOI):
        return Frame(decode_jpeg(buf[:end]), 'bgr')
    img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise ImageError(f'corrupt PNG ({buf.size} bytes): decoder returned nothing')
    return Frame(img, 'bgr')
