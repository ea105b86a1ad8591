#!/usr/bin/env python3
"""Checks revault_lockbox_api/tests/golden/v3-signed.lbox against FORMAT.md
§3.8 and §3.10 with implementations other than lockbox's (Python's blake3,
pyca/cryptography >= 46): the commit hash of the last trailer, the
signature block's layout, and both halves of its one signature over
"revault-lockbox v3 signature" || archive_id || commit_hash || flags.
Prints the values FORMAT.md §10 lists."""
import sys
import blake3
from cryptography.hazmat.primitives.asymmetric import ed25519, mldsa

path = sys.argv[1] if len(sys.argv) > 1 else "revault_lockbox_api/tests/golden/v3-signed.lbox"
data = open(path, "rb").read()
archive_id = data[12:28]
trailer = data[-216:]
commit = blake3.blake3(trailer[:196], derive_key_context="revault-lockbox v3 commit").digest()
block_len = int.from_bytes(trailer[196:200], "little")
block = data[-216 - block_len:-216]
assert block[:9] == b"LBOXSIGN\x01" and int.from_bytes(block[9:11], "little") == 1
assert int.from_bytes(block[11:15], "little") == 32 and int.from_bytes(block[47:51], "little") == 5358
key_id, flags, public, signature = block[15:47], block[51], block[52:2036], block[2036:]
assert len(signature) == 3373
message = b"revault-lockbox v3 signature" + archive_id + commit + bytes([flags])
ed25519.Ed25519PublicKey.from_public_bytes(public[:32]).verify(signature[:64], message)
mldsa.MLDSA65PublicKey.from_public_bytes(public[32:]).verify(signature[64:], message)
for k, v in [("archive id", archive_id.hex()), ("commit hash", commit.hex()), ("block", f"{block_len} bytes at {len(data) - 216 - block_len}"),
             ("key id", key_id.hex()), ("flags", flags), ("message", message.hex()), ("ed25519 half", signature[:64].hex())]:
    print(f"{k}: {v}")
print("both halves verify")
