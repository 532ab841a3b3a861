"""The protobuf wire format, as far as reading an Event needs: varints, fixed 32/64-bit fields and
length-delimited fields, each read checked against the bytes that are there."""
import struct

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5


class WireError(Exception):
    """Bytes that are no valid message; the reader adds which file and record."""


def _varint(data, at):
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise WireError("a varint runs past the end")
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise WireError("a varint longer than 10 bytes")
    if value >= 1 << 64:
        raise WireError("a varint overflows 64 bits")
    return value, at


def fields(data, message):
    """Yields (field number, wire type, value) of every field of one message: an int for varints and
    fixed fields, bytes for length-delimited ones. `message` names the message in errors."""
    at = 0
    while at < len(data):
        try:
            key, at = _varint(data, at)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise WireError("field number 0")
            if wire == VARINT:
                value, at = _varint(data, at)
            elif wire in (FIXED64, FIXED32):
                size = 8 if wire == FIXED64 else 4
                if at + size > len(data):
                    raise WireError("a fixed-size field runs past the end")
                value = int.from_bytes(data[at:at + size], "little")
                at += size
            elif wire == LENGTH_DELIMITED:
                size, at = _varint(data, at)
                if at + size > len(data):
                    raise WireError("a %d-byte field runs past the end" % size)
                value = data[at:at + size]
                at += size
            else:  # 3, 4: groups, deprecated and never in events; 6, 7: undefined
                raise WireError("wire type %d" % wire)
        except WireError as e:
            raise WireError("%s: %s (at byte %d)" % (message, e, at)) from None
        yield number, wire, value


def expect(number, wire, want, message):
    if wire != want:
        raise WireError("%s: field %d has wire type %d, expected %d" % (message, number, wire, want))


def as_int64(value):
    """A varint read as int64 (negative numbers are ten-byte two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def as_float(bits):
    return struct.unpack("<f", bits.to_bytes(4, "little"))[0]
