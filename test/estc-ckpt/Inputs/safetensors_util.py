"""An independent, standard-library-only implementation of the estc checkpoint
format (docs/checkpoint-format.md), for the lit tests and the unit tests'
cross-check:

  safetensors_util.py make OUT         write the sample checkpoint the lit tests use
  safetensors_util.py check FILE       parse FILE as plain safetensors, verify
                                       every crc32c/<name>; print one line per tensor
  safetensors_util.py flip FILE OFFSET flip the bits of the byte at OFFSET
                                       (negative: from the end)
"""
import json
import math
import struct
import sys

_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _TABLE.append(c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


SIZES = {"F32": 4, "F64": 8, "I32": 4, "I64": 8, "BOOL": 1, "F16": 2, "BF16": 2}
PACK = {"F32": "f", "F64": "d", "I32": "i", "I64": "q", "BOOL": "?", "F16": "e"}


def write(path, tensors, step):
    """tensors: list of (name, dtype, shape, values)."""
    meta = {"format": "estc-checkpoint-1", "global_step": str(step)}
    header, data = {}, b""
    for name, dtype, shape, values in sorted(tensors):
        if dtype == "BF16":
            raw = b"".join(struct.pack("<f", v)[2:] for v in values)
        else:
            raw = struct.pack("<%d%s" % (len(values), PACK[dtype]), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        meta["crc32c/" + name] = "%08x" % crc32c(raw)
        data += raw
    header["__metadata__"] = meta
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def make(path):
    nan, inf = float("nan"), float("inf")
    write(path, [
        ("dense/kernel", "F32", [2, 3], [1, 2, 3, 4, 5, 6]),
        ("dense/bias", "F32", [3], [0.5, nan, -inf]),
        ("global_step", "I64", [], [200]),
        ("mask", "BOOL", [2], [True, False]),
        ("half", "F16", [2], [1.5, -2]),
        ("brain", "BF16", [1], [0.25]),
        ("counts", "I32", [2, 2], [1, -2, 3, -4]),
        ("moment", "F64", [1], [0.1]),
        ("empty", "F32", [0, 4], []),
    ], 200)


def check(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    meta = header.pop("__metadata__")
    assert meta["format"] == "estc-checkpoint-1", meta
    spans = []
    for name, e in sorted(header.items()):
        begin, end = e["data_offsets"]
        count = math.prod(e["shape"])
        assert end - begin == count * SIZES[e["dtype"]], name
        raw = data[begin:end]
        assert meta["crc32c/" + name] == "%08x" % crc32c(raw), name
        spans.append((begin, end))
        print("%s %s %s" % (name, e["dtype"], e["shape"]))
    spans.sort()
    pos = 0
    for begin, end in spans:
        assert begin == pos, "hole or overlap"
        pos = end
    assert pos == len(data), "trailing bytes"
    print("global_step %s ok" % meta["global_step"])


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset, 0 if offset >= 0 else 2)
        pos = f.tell()
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "check":
        check(sys.argv[2])
    elif cmd == "flip":
        flip(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit("unknown command " + cmd)
