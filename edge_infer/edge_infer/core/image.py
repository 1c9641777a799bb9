# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Camera messages to numpy images, without copies where the layout allows.

Works on the fields of sensor_msgs/Image and sensor_msgs/CompressedImage
(passed as plain values, so this module needs no ROS). Every problem raises
:class:`ImageError` with a one-line reason that the node logs as is.
"""

from dataclasses import dataclass

import cv2
import numpy as np

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


def from_compressed(fmt: str, data) -> Frame:
    """Decode a sensor_msgs/CompressedImage (jpeg or png) to a BGR frame.

    Truncated files are rejected (libjpeg would otherwise return a partly grey
    image with only a warning on stderr).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size == 0:
        raise ImageError('empty compressed image')
    head = bytes(buf[:8])
    kind = fmt.lower()
    if head.startswith(_JPEG_SOI):
        if bytes(buf[-2:]) != _JPEG_EOI:
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
    img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise ImageError(f'corrupt {"PNG" if head.startswith(_PNG_SIG) else "JPEG"} '
                         f'({buf.size} bytes): decoder returned nothing')
    return Frame(img, 'bgr')
