#!/usr/bin/env python3
"""The chunker's known-answer vectors (docs/DEDUP.md), from the spec alone.

An independent implementation of the keyed chunker and chunk ids in plain
Python (hashlib/hmac for HKDF-SHA256, the `blake3` package for BLAKE3), so
that the numbers `chunk::known_answers` compares with the Rust code were
not computed by that code. Prints the vectors; takes about a minute.

    python3 scripts/chunk-vectors.py
"""

import hashlib
import hmac

import blake3

MASKS = [
    0, 0, 0, 0, 0,
    0x0000000001804110, 0x0000000001803110, 0x0000000018035100, 0x0000001800035300,
    0x0000019000353000, 0x0000590003530000, 0x0000d90003530000, 0x0000d90103530000,
    0x0000d90303530000, 0x0000d90313530000, 0x0000d90f03530000, 0x0000d90303537000,
    0x0000d90703537000, 0x0000d90707537000, 0x0000d91707537000, 0x0000d91747537000,
    0x0000d91767537000, 0x0000d93767537000, 0x0000d93777537000, 0x0000d93777577000,
    0x0000db3777577000,
]
NORMALIZATION = 2
M64 = (1 << 64) - 1


def hkdf_extract(salt, ikm):
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand(prk, info, length):
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def chunk_keys(content_key, archive_id):
    prk = hkdf_extract(archive_id, content_key)
    raw = hkdf_expand(prk, b"revault-lockbox v4 chunk gear", 2048)
    gear = [int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(256)]
    id_key = hkdf_expand(prk, b"revault-lockbox v4 chunk id", 32)
    return gear, id_key


def masks(avg):
    import math
    bits = round(math.log2(avg))
    return MASKS[bits + NORMALIZATION], MASKS[bits - NORMALIZATION]


def cut(window, gear, lo, avg, hi):
    """Length of the chunk starting at window[0]."""
    n = len(window)
    if n <= lo:
        return n
    mask_s, mask_l = masks(avg)
    remaining, center = n, avg
    if remaining > hi:
        remaining = hi
    elif remaining < center:
        center = remaining
    strict_end = center // 2 * 2
    h = 0
    for p in range(lo, remaining // 2 * 2):
        h = ((h << 1) + gear[window[p]]) & M64
        if h & (mask_s if p < strict_end else mask_l) == 0:
            return p
    return remaining


def chunks(data, gear, lo, avg, hi):
    ends, at = [], 0
    while at < len(data):
        at += cut(memoryview(data)[at:], gear, lo, avg, hi)
        ends.append(at)
    return ends


def main():
    data = blake3.blake3(b"revault-lockbox chunker test vector").digest(length=8 << 20)
    content_key = bytes(range(32))
    archive_id = bytes(range(0xa0, 0xb0))
    gear, id_key = chunk_keys(content_key, archive_id)
    print("input blake3:", blake3.blake3(data).hexdigest())
    print("gear[0..4]:", [f"{g:#018x}" for g in gear[:4]])
    print("chunk id key:", id_key.hex())
    sizes = [
        (64 << 10, 256 << 10, 1 << 20, 8 << 20),  # the default
        (256 << 10, 1 << 20, 4 << 20, 8 << 20),
        (1 << 10, 4 << 10, 16 << 10, 64 << 10),
    ]
    for lo, avg, hi, length in sizes:
        ends = chunks(data[:length], gear, lo, avg, hi)
        print(f"sizes {lo}/{avg}/{hi} on the first {length} bytes: ends {ends}")
        start = 0
        for end in ends[:3]:
            print("  id", start, end, blake3.blake3(data[start:end], key=id_key).hexdigest())
            start = end
    other, _ = chunk_keys(bytes(range(1, 33)), archive_id)
    print("another key (01..20), default sizes:", chunks(data, other, 64 << 10, 256 << 10, 1 << 20))
    zeros = bytes(20 << 10)
    print("zeros 20 KiB, small sizes:", chunks(zeros, gear, 1 << 10, 4 << 10, 16 << 10))


if __name__ == "__main__":
    main()
