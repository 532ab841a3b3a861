"""Event files made for the tests, written here from the TFRecord and protobuf definitions (CRC32C
bit by bit), independently of ddp-plot's reader and of the C++ writer."""
import struct


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def file_version():
    return field(1, 1, struct.pack("<d", 1.0)) + field(3, 2, b"brain.Event:2")


def session_start(step):
    return field(1, 1, struct.pack("<d", 1.0)) + field(2, 0, varint(step)) + field(7, 2, field(1, 0, varint(1)))


def scalars(step, values):
    summary = b"".join(field(1, 2, field(1, 2, tag.encode()) + field(2, 5, struct.pack("<f", v)))
                       for tag, v in values.items())
    return field(1, 1, struct.pack("<d", 1.0)) + field(2, 0, varint(step)) + field(5, 2, summary)


def event_file(events):
    return b"".join(frame(e) for e in events)
