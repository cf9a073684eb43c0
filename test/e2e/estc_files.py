"""Readers of what estc writes into a model_dir, for the end-to-end tests.

Written from docs/checkpoint-format.md, independently of the C++ readers, so
that a test using them cross-checks the writers:

  tensors(path)          a checkpoint's tensors (safetensors, estc metadata)
  checkpoint_state(dir)  the `checkpoint` state file: (latest step, listed)
  read_event_file(path)  the Events of an event file (TFRecords, masked
                         CRC32C of length and data checked), and whether the
                         file ends inside a record
  scalars(events)        {(step, tag): float32 bits} of the simple values
"""
import json
import os
import re
import struct


class FormatError(Exception):
    """A file that does not follow docs/checkpoint-format.md."""


# --- CRC-32C (Castagnoli), as lib/Support/Crc32c ---------------------------

def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# --- Checkpoints -----------------------------------------------------------

def tensors(path):
    """safetensors file -> {name: (dtype, shape, bytes)} (metadata left out)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), data[begin:end])
    return out


def checkpoint_file(model_dir, prefix):
    return os.path.join(model_dir, prefix + ".safetensors")


def checkpoint_state(model_dir):
    """(latest step, listed prefixes) from the text state file; (None, [])
    when there is none."""
    path = os.path.join(model_dir, "checkpoint")
    if not os.path.exists(path):
        return None, []
    with open(path) as f:
        text = f.read()
    latest = re.search(r'^model_checkpoint_path: "([^"]+)"$', text, re.M)
    if not latest:
        raise FormatError("%s: no model_checkpoint_path:\n%s" % (path, text))
    listed = re.findall(r'^all_model_checkpoint_paths: "([^"]+)"$', text,
                        re.M)
    return int(latest.group(1).rsplit("-", 1)[1]), listed


# --- Event files -----------------------------------------------------------

def _varint(buf, pos):
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise FormatError("varint runs past the end")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos
        if shift > 63:
            raise FormatError("varint longer than 10 bytes")


def _fields(buf):
    """(field number, wire type, value) of a protobuf message; value is an
    int (varint, fixed32/64 as raw little-endian bytes) or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise FormatError("unsupported wire type %d" % wire)
        if pos > len(buf):
            raise FormatError("field %d runs past the end" % field)
        yield field, wire, value


def parse_event(data):
    """Event (lib/Summary/event.proto, TF's field numbers) -> dict with
    wall_time, step, file_version (or None) and values [(tag, float32 bits
    as bytes)] of the simple values."""
    event = {"wall_time": None, "step": 0, "file_version": None, "values": []}
    for field, wire, value in _fields(data):
        if field == 1 and wire == 1:
            (event["wall_time"],) = struct.unpack("<d", value)
        elif field == 2 and wire == 0:
            event["step"] = value
        elif field == 3 and wire == 2:
            event["file_version"] = value.decode()
        elif field == 5 and wire == 2:
            for vf, vw, v in _fields(value):
                if vf != 1 or vw != 2:
                    continue
                tag, simple = None, None
                for f, w, x in _fields(v):
                    if f == 1 and w == 2:
                        tag = x.decode()
                    elif f == 2 and w == 5:
                        simple = bytes(x)
                if tag is not None and simple is not None:
                    event["values"].append((tag, simple))
    return event


def read_event_file(path):
    """(events, truncated_tail): every record's CRCs are checked; a file that
    ends inside a record (what a writer killed mid-write leaves: a prefix of
    its last record) returns truncated_tail = the number of bytes of that
    prefix, else 0. Anything else wrong raises FormatError naming the file
    and the record's offset."""
    with open(path, "rb") as f:
        blob = f.read()
    events, pos = [], 0
    while pos < len(blob):
        where = "%s: record at offset %d: " % (path, pos)
        left = len(blob) - pos
        if left < 12:
            return events, left
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if masked_crc32c(header) != length_crc:
            raise FormatError(where + "length CRC mismatch")
        if left < 12 + length + 4:
            return events, left
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:
                                               pos + 16 + length])
        if masked_crc32c(data) != data_crc:
            raise FormatError(where + "data CRC mismatch")
        try:
            events.append(parse_event(data))
        except FormatError as e:
            raise FormatError(where + "not an Event: %s" % e)
        pos += 16 + length
    if events and events[0]["file_version"] != "brain.Event:2":
        raise FormatError("%s: the first record is not the file_version "
                          "'brain.Event:2'" % path)
    return events, 0


def event_files(model_dir):
    """Event files of model_dir and of its eval* subdirectories, sorted."""
    out = []
    for root in [model_dir] + sorted(
            os.path.join(model_dir, d) for d in os.listdir(model_dir)
            if d.startswith("eval")
            and os.path.isdir(os.path.join(model_dir, d))):
        out += sorted(os.path.join(root, n) for n in os.listdir(root)
                      if "tfevents" in n)
    return out


def scalars(events, skip=lambda tag: False):
    """{(step, tag): float32 bytes}; a (step, tag) written twice with
    different values raises FormatError."""
    out = {}
    for e in events:
        for tag, value in e["values"]:
            if skip(tag):
                continue
            key = (e["step"], tag)
            if out.setdefault(key, value) != value:
                raise FormatError("step %d: '%s' written twice, %r and %r" %
                                  (e["step"], tag, out[key], value))
    return out


def as_float(bits):
    return struct.unpack("<f", bits)[0]
