# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Read camera messages straight from their serialized (CDR) bytes, without copies.

rclpy hands a ``raw=True`` subscription the serialized message as ``bytes``.
``deserialize_message`` would copy the pixels into a new message object; here
the few header fields are read with ``struct`` and the pixel payload stays a
``memoryview`` on those bytes, which numpy views in turn. Layouts follow the
OMG XCDR1 rules ROS 2 uses: a 4-byte encapsulation header, then fields
aligned to their size relative to the end of that header.

Any layout surprise raises :class:`CdrError`; callers may fall back to
``rclpy.serialization.deserialize_message``.
"""

from dataclasses import dataclass
import struct


class CdrError(ValueError):
    """Bytes that are not a well-formed serialized message of the expected type."""


@dataclass
class ImageFields:
    """Fields of sensor_msgs/Image or CompressedImage; ``data`` is a view, not a copy."""

    sec: int
    nanosec: int
    frame_id: str
    data: memoryview
    height: int = 0
    width: int = 0
    encoding: str = ''
    is_bigendian: int = 0
    step: int = 0
    format: str = ''  # noqa: A003  (CompressedImage's field name)


class _Reader:
    def __init__(self, buf):
        self.buf = memoryview(buf)
        if len(self.buf) < 4:
            raise CdrError(f'{len(self.buf)} bytes: too short for a CDR message')
        kind = bytes(self.buf[:4])
        if kind[:2] == b'\x00\x01':
            self.endian = '<'
        elif kind[:2] == b'\x00\x00':
            self.endian = '>'
        else:
            raise CdrError(f'unsupported CDR encapsulation {kind[:2].hex()}')
        self.pos = 4

    def _align(self, n: int) -> None:
        self.pos += (-(self.pos - 4)) % n

    def u32(self) -> int:
        self._align(4)
        if self.pos + 4 > len(self.buf):
            raise CdrError('message ends inside a 32-bit field')
        (v,) = struct.unpack_from(self.endian + 'I', self.buf, self.pos)
        self.pos += 4
        return v

    def i32(self) -> int:
        v = self.u32()
        return v - (1 << 32) if v & 0x80000000 else v

    def u8(self) -> int:
        if self.pos >= len(self.buf):
            raise CdrError('message ends inside an 8-bit field')
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def bytes_seq(self) -> memoryview:
        n = self.u32()
        if self.pos + n > len(self.buf):
            raise CdrError(f'sequence of {n} bytes runs past the end of the message')
        view = self.buf[self.pos:self.pos + n]
        self.pos += n
        return view

    def string(self) -> str:
        raw = self.bytes_seq()
        if len(raw) == 0:
            return ''
        if raw[-1] != 0:
            raise CdrError('string without its terminating NUL')
        return bytes(raw[:-1]).decode('utf-8', errors='replace')


def parse_image(buf) -> ImageFields:
    """Parse a serialized sensor_msgs/Image; ``data`` views ``buf``."""
    r = _Reader(buf)
    sec, nanosec, frame_id = r.i32(), r.u32(), r.string()
    height, width = r.u32(), r.u32()
    encoding = r.string()
    is_bigendian = r.u8()
    step = r.u32()
    data = r.bytes_seq()
    return ImageFields(sec, nanosec, frame_id, data, height=height, width=width,
                       encoding=encoding, is_bigendian=is_bigendian, step=step)


def parse_compressed_image(buf) -> ImageFields:
    """Parse a serialized sensor_msgs/CompressedImage; ``data`` views ``buf``."""
    r = _Reader(buf)
    sec, nanosec, frame_id = r.i32(), r.u32(), r.string()
    fmt = r.string()
    data = r.bytes_seq()
    return ImageFields(sec, nanosec, frame_id, data, format=fmt)


def parse_header(buf) -> tuple:
    """Return ``(sec, nanosec, frame_id)`` of any message whose first field is a Header."""
    r = _Reader(buf)
    return r.i32(), r.u32(), r.string()


def parse_result_times(buf) -> tuple:
    """Return ``(sec, nanosec, preprocess_ms, inference_ms, postprocess_ms)`` of a result.

    For edge_infer's result messages (DetectionArray, Classification,
    PoseDetectionArray, Segmentation): header, model, backend, image width
    and height, then the three stage times. Only those fields are read.
    """
    r = _Reader(buf)
    sec, nanosec = r.i32(), r.u32()
    r.string()                      # frame_id
    r.string()                      # model
    r.string()                      # backend
    r.u32()                         # image_width
    r.u32()                         # image_height
    times = []
    for _ in range(3):
        r._align(4)
        if r.pos + 4 > len(r.buf):
            raise CdrError('message ends inside a float field')
        (v,) = struct.unpack_from(r.endian + 'f', r.buf, r.pos)
        r.pos += 4
        times.append(v)
    return (sec, nanosec, *times)


def set_stamp(buf: bytearray, t_ns: int) -> None:
    """Set the header stamp of the serialized message ``buf`` to ``t_ns`` (in place).

    The stamp is the first field of any message that begins with a Header:
    bytes 4-11, after the encapsulation header.
    """
    endian = _Reader(buf).endian
    struct.pack_into(endian + 'iI', buf, 4, t_ns // 1_000_000_000, t_ns % 1_000_000_000)
