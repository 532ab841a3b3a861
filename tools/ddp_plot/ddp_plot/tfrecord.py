"""TFRecord framing, the container of TensorBoard event files: each record is
  uint64 length (LE) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data."""
import struct

from .crc32c import masked_crc32c
from .problems import InputError

HEADER_BYTES = 12
FOOTER_BYTES = 4
# Far above any event the trainers write (a scalar event is ~60 bytes); a larger length whose CRC
# matched anyway is no file of ours.
MAX_RECORD_BYTES = 256 << 20


def looks_like_tfrecord(head):
    """Whether `head` (a file's first bytes) starts with a record header whose length CRC holds:
    how a file not named events.out.tfevents.* is still recognised as one."""
    if len(head) < HEADER_BYTES:
        return False
    return struct.unpack_from("<I", head, 8)[0] == masked_crc32c(head[:8])


def split_records(data, path):
    """[(offset, record bytes)] of a whole file, and why its tail is no record (None when there is
    none): a last record cut short is what a writer killed mid-write leaves, so the caller decides.
    A length or data CRC that does not match is an InputError naming the file, record and offset."""
    records, at = [], 0
    while at < len(data):
        number = len(records) + 1
        left = len(data) - at
        if left < HEADER_BYTES:
            return records, "%d bytes of a record header at offset %d (record %d)" % (left, at, number)
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        if length_crc != masked_crc32c(data[at:at + 8]):
            raise InputError("%s: record %d at offset %d: its length fails its CRC32C (a damaged file, or no "
                             "TensorBoard event file)" % (path, number, at))
        if length > MAX_RECORD_BYTES:
            raise InputError("%s: record %d at offset %d claims %d bytes, more than an event file of ours holds"
                             % (path, number, at, length))
        whole = HEADER_BYTES + length + FOOTER_BYTES
        if whole > left:
            return records, "%d bytes of a %d-byte record at offset %d (record %d)" % (left, whole, at, number)
        body = data[at + HEADER_BYTES:at + HEADER_BYTES + length]
        (data_crc,) = struct.unpack_from("<I", data, at + HEADER_BYTES + length)
        if data_crc != masked_crc32c(body):
            raise InputError("%s: record %d at offset %d: its data fails its CRC32C (a damaged file)"
                             % (path, number, at))
        records.append((at, body))
        at += whole
    return records, None
