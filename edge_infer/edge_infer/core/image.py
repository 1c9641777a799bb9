# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Camera messages to numpy images, without copies where the layout allows.

Works on the fields of sensor_msgs/Image and sensor_msgs/CompressedImage
(passed as plain values, so this module needs no ROS). Every problem raises
:class:`ImageError` with a one-line reason that the node logs as is.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

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
    ``source_size`` (width, height) is set when the pixels are a scaled-down
    decode of a larger image (JPEG DCT scaling): results are given in the
    source's pixels, and ``width`` / ``height`` are the source's.
    """

    pixels: np.ndarray
    color: str
    source_size: Optional[Tuple[int, int]] = None

    @property
    def width(self) -> int:
        """Image width in pixels (the source's)."""
        return int(self.source_size[0] if self.source_size else self.pixels.shape[1])

    @property
    def height(self) -> int:
        """Image height in pixels (the source's)."""
        return int(self.source_size[1] if self.source_size else self.pixels.shape[0])


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
        raise ImageError(f'empty {enc} image: {width}x{height}')
    row = width * channels
    if step < row:
        raise ImageError(f'{enc} {width}x{height}: step {step} < width {width} x {channels} '
                         f'channels = {row}')
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size != step * height:
        raise ImageError(
            f'{enc} {width}x{height}: data size {buf.size} != step {step} x height {height} '
            f'= {step * height}')
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


def decode_scale(spec, width: int, height: int) -> Tuple[int, int]:
    """Return the smallest (width, height) a ``width`` x ``height`` image may be decoded at.

    ``spec``: the model's InputSpec. Smaller and the model's input would be
    upscaled from it: the letterboxed or centre-cropped image's size in the
    model input, or the input itself when it is stretched.
    """
    W, H = spec.width, spec.height
    if spec.resize == 'stretch':
        return min(width, W), min(height, H)
    if spec.resize == 'letterbox':
        scale = min(W / width, H / height)
    else:
        scale = (min(W, H) / spec.crop_fraction) / min(width, height)
    scale = min(1.0, scale)
    return int(np.ceil(width * scale)), int(np.ceil(height * scale))


def decode_jpeg(data, min_size: Tuple[int, int] = (0, 0)) -> np.ndarray:
    """Decode a complete JPEG to BGR; ImageError if the decoder reports corrupt data.

    ``min_size`` (width, height): libjpeg-turbo decodes at the smallest of its
    DCT scales (n/8) that gives at least that size: a 768x576 frame for a
    224 classifier decodes at 1/2, 4x fewer pixels (simplejpeg only).
    """
    if simplejpeg is None:
        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if img is None or img.size == 0:
            raise ImageError(f'corrupt JPEG ({len(data)} bytes): decoder returned nothing')
        return img
    try:
        return simplejpeg.decode_jpeg(data, colorspace='BGR', strict=True,
                                      min_width=min_size[0], min_height=min_size[1])
    except ValueError as exc:   # libjpeg's warnings and errors, one line
        why = str(exc).splitlines()[0] if str(exc) else 'decoder failed'
        if why.startswith('Corrupt JPEG data: '):
            why = why[len('Corrupt JPEG data: '):]
        raise ImageError(f'corrupt JPEG ({len(data)} bytes): {why}') from None


def from_compressed(fmt: str, data, input_spec=None) -> Frame:
    """Decode a sensor_msgs/CompressedImage (jpeg or png) to a BGR frame.

    Truncated and corrupt files are rejected with the reason: libjpeg would
    otherwise return a partly grey or garbled image with only a warning on
    stderr (JPEG is decoded in simplejpeg's strict mode where it is installed).
    With the model's ``input_spec`` and its ``jpeg_dct_scaling`` on, a JPEG
    is decoded at 1/2, 1/4 or 1/8 scale where that still gives the model all
    it needs (:func:`decode_scale`; whole otherwise); the frame then keeps the
    source's size in ``source_size``. Off by default: on the bundled frames
    it changed MobileNetV2's top-1 on 6 of 24 (bench/probes/preprocess.py). A
    16-bit PNG (a depth image) is rejected: the models take 8-bit colour.
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
        return _jpeg_frame(buf[:end], input_spec)
    if buf.size > 25 and buf[24] != 8:      # IHDR bit depth (1, 2, 4, 8 or 16)
        colour = {0: 'grey', 2: 'RGB', 3: 'palette', 4: 'grey+alpha', 6: 'RGBA'}.get(
            int(buf[25]), f'colour type {int(buf[25])}')
        if buf[24] == 16:
            raise ImageError(f'16-bit {colour} PNG ({buf.size} bytes; a depth image?): the '
                             f'models take 8-bit colour; publish depth on its own topic or '
                             f'convert it to 8 bits')
    img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise ImageError(f'corrupt PNG ({buf.size} bytes): decoder returned nothing')
    return Frame(img, 'bgr')


def _jpeg_frame(data: np.ndarray, input_spec) -> Frame:
    """Decode a JPEG, at the scale ``input_spec``'s model needs when given."""
    if input_spec is None or simplejpeg is None or not input_spec.jpeg_dct_scaling:
        return Frame(decode_jpeg(data), 'bgr')
    try:
        h, w = simplejpeg.decode_jpeg_header(data)[:2]
    except ValueError as exc:
        raise ImageError(f'corrupt JPEG ({data.size} bytes): {str(exc)[:100]}') from None
    need_w, need_h = decode_scale(input_spec, w, h)
    # Only 1/2, 1/4 and 1/8: libjpeg-turbo's other n/8 scales cost more than a
    # whole decode (a 768x576 frame at 5/8: 1.69 ms with preprocessing, whole 1.40)
    size = (0, 0)
    for f in (8, 4, 2):
        if -(-w // f) >= need_w and -(-h // f) >= need_h:
            size = (-(-w // f), -(-h // f))
            break
    img = decode_jpeg(data, size)
    return Frame(img, 'bgr', None if img.shape[:2] == (h, w) else (w, h))
