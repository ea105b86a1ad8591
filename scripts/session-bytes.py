#!/usr/bin/env python3
"""Where each session's bytes go: data pages, index nodes by table, root, header, signatures, trailer.

    scripts/session-bytes.py ARCHIVE.lbox

Reads only the clear parts FORMAT.md defines (no key needed): the trailer
chain from the file's end (§3.8: `previous_trailer` at byte 156,
`signature_len` at 196), each session header's clear part (§3.9:
`body_stored_len` at byte 60), and the frames of the units in between
(§3.4: kind, table, and `stored_len` at byte 16) up to the root; what
lies between the root and the trailer is the signature block and the
header copy. A torn tail or damage stops it with an error; this is a
measuring tool, not a reader.
"""

import collections
import struct
import sys

TRAILER = 216
FRAME = 20
UNITS = {(1, 0): "data pages", (2, 1): "entries index", (2, 2): "pages index",
         (2, 3): "sessions index", (2, 4): "chunk index", (3, 0): "root"}


def sessions(data):
    """(header offset, trailer end) of every session, oldest first."""
    out, end = [], len(data)
    while True:
        t = data[end - TRAILER:end]
        if t[:8] != b"LBOXTAIL":
            sys.exit(f"session-bytes: no trailer ends at {end}")
        previous = struct.unpack_from("<Q", t, 156)[0]
        out.append((previous, end))
        if previous == 0:
            break
        end = previous
    out.reverse()
    slot_len = struct.unpack_from("<H", data, 30)[0]
    first = out[0]
    out[0] = (32 + 16 * slot_len, first[1])
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    for number, (start, end) in enumerate(sessions(data)):
        if data[start:start + 8] != b"LBOXSESS":
            sys.exit(f"session-bytes: no session header at {start}")
        header = 64 + struct.unpack_from("<I", data, start + 60)[0]
        signatures = struct.unpack_from("<I", data, end - TRAILER + 196)[0]
        sizes, counts = collections.Counter(header=header, trailer=TRAILER), collections.Counter()
        # Units run from the header to the root; what follows the root
        # before the trailer is the signature block and (version 4) the
        # header copy.
        pos, name = start + header, None
        while name != "root":
            kind, table = data[pos], data[pos + 1]
            name = UNITS.get((kind, table if kind == 2 else 0))
            if name is None:
                sys.exit(f"session-bytes: no unit frame at {pos} (session {number})")
            stored = struct.unpack_from("<I", data, pos + 16)[0]
            sizes[name] += FRAME + stored
            counts[name] += 1
            pos += FRAME + stored
        if signatures:
            sizes["signatures"] = signatures
        rest = end - TRAILER - signatures - pos
        if rest:
            sizes["header copy"] = rest
        parts = ", ".join(f"{name} {size / 1024:.1f} KiB" + (f" ({counts[name]})" if counts[name] else "")
                          for name, size in sizes.most_common())
        print(f"session {number}: {(end - start) / (1 << 20):.3f} MiB: {parts}")


if __name__ == "__main__":
    main()
