"""An independent, standard-library-only writer of TF's tensor bundle (V2
checkpoint) format (docs/checkpoint-format.md), for the lit tests:

  tf_bundle_util.py make PREFIX [--no-uint8]
                                     write PREFIX.index and
                                     PREFIX.data-00000-of-00001: a TF
                                     checkpoint of float32, int64, string and
                                     (unless --no-uint8) uint8 tensors
  tf_bundle_util.py flip FILE OFFSET flip the bits of the byte at OFFSET
                                     (negative: from the end)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_util import crc32c  # noqa: E402


def mask(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(number, wire, payload):
    tag = varint(number << 3 | wire)
    if wire == 0:
        return tag + varint(payload)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload  # wire 5: fixed32 bytes


def entry(dtype, shape, offset, data, crc=None):
    shape_msg = b"".join(field(2, 2, field(1, 0, d) if d else b"") for d in shape)
    out = field(1, 0, dtype) + field(2, 2, shape_msg)
    if offset:
        out += field(4, 0, offset)
    if data:
        out += field(5, 0, len(data))
    out += field(6, 5, struct.pack("<I", mask(crc32c(data) if crc is None else crc)))
    return out


def block(entries):
    out, restarts, last = bytearray(), [], b""
    for i, (k, v) in enumerate(entries):
        shared = 0
        if i % 16 == 0:
            restarts.append(len(out))
        else:
            while shared < min(len(k), len(last)) and k[shared] == last[shared]:
                shared += 1
        out += varint(shared) + varint(len(k) - shared) + varint(len(v)) + k[shared:] + v
        last = k
    for r in restarts or [0]:
        out += struct.pack("<I", r)
    out += struct.pack("<I", len(restarts or [0]))
    return bytes(out)


def table(entries):
    out = bytearray()

    def write(contents):
        handle = varint(len(out)) + varint(len(contents))
        out.extend(contents)
        out.append(0)
        out.extend(struct.pack("<I", mask(crc32c(contents + b"\x00"))))
        return handle

    data = write(block(entries))
    meta = write(block([]))
    index = write(block([(entries[-1][0], data)]))
    footer = (meta + index).ljust(40, b"\x00") + struct.pack("<Q", 0xDB4775248B80FB57)
    return bytes(out) + footer


def string_tensor(strings):
    lengths = b"".join(varint(len(s)) for s in strings)
    raw = b""
    for s in strings:
        raw += struct.pack("<I", len(s))
    crc_lengths = crc32c(raw)
    masked = struct.pack("<I", mask(crc_lengths))
    body = b"".join(strings)
    whole_crc = crc32c(raw + masked + body)
    return lengths + masked + body, whole_crc


def make(prefix, uint8=True):
    tensors = []  # (name, dtype, shape, bytes, crc or None)
    tensors.append(("dense/kernel", 1, [2, 2], struct.pack("<4f", 1, 2, 3, 4.5), None))
    tensors.append(("global_step", 9, [], struct.pack("<q", 300), None))
    data, crc = string_tensor([b"hello", b"", b"w\x00rld"])
    tensors.append(("vocab", 7, [3], data, crc))
    if uint8:
        tensors.append(("quantized", 4, [3], bytes([1, 2, 255]), None))
    blob, entries = bytearray(), []
    for name, dtype, shape, data, crc in sorted(tensors):
        entries.append((name.encode(), entry(dtype, shape, len(blob), data, crc)))
        blob += data
    header = field(1, 0, 1) + field(3, 2, field(1, 0, 1))
    with open(prefix + ".index", "wb") as f:
        f.write(table([(b"", header)] + entries))
    with open(prefix + ".data-00000-of-00001", "wb") as f:
        f.write(bytes(blob))


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(int(offset), os.SEEK_END if int(offset) < 0 else os.SEEK_SET)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], uint8="--no-uint8" not in sys.argv[3:])
    elif sys.argv[1] == "flip":
        flip(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
