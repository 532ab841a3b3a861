"""CRC32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord's mask of it, which event files
carry for every record's length and data."""

MASK_DELTA = 0xA282EAD8


def _table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _table()


def crc32c(data):
    crc = 0xFFFFFFFF
    table = _TABLE  # a local: the loop runs once per byte of every record
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    """TFRecord stores CRCs rotated and offset, so that a CRC of data holding CRCs stays strong."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF
