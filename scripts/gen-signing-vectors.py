#!/usr/bin/env python3
"""Writes revault_lockbox_api/tests/vectors/signing/hybrid-v1.txt: the
known-answer vectors of docs/KEYS.md ("Signing keys"), made with an
implementation other than lockbox's (pyca/cryptography >= 46: Ed25519,
ML-DSA-65, Argon2id, ChaCha20-Poly1305), so that the Rust test checks
lockbox against it. The ML-DSA signature is hedged (random), so each run
writes a different valid one; the frozen file is the one the test reads.
"""
import base64, hashlib, sys
from cryptography.hazmat.primitives.asymmetric import ed25519, mldsa
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from cryptography.hazmat.primitives import serialization as s

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

def bech32(hrp, data):
    def polymod(values):
        gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
        chk = 1
        for v in values:
            top = chk >> 25
            chk = (chk & 0x1FFFFFF) << 5 ^ v
            for i in range(5):
                chk ^= gen[i] if (top >> i) & 1 else 0
        return chk
    acc, bits, five = 0, 0, []
    for b in data:
        acc, bits = (acc << 8) | b, bits + 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    expand = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    pm = polymod(expand + five + [0] * 6) ^ 1
    check = [(pm >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(CHARSET[d] for d in five + check)

raw = s.Encoding.Raw, s.PublicFormat.Raw
ed_seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")  # RFC 8032 test 1
ml_seed = bytes(range(32))
ed = ed25519.Ed25519PrivateKey.from_private_bytes(ed_seed)
ml = mldsa.MLDSA65PrivateKey.from_seed_bytes(ml_seed)
public = ed.public_key().public_bytes(*raw) + ml.public_key().public_bytes_raw()
assert len(public) == 1984
fingerprint = bech32("lbsig", hashlib.sha256(b"revault-lockbox signing key fingerprint" + public).digest())
archive_id, commit, flags = bytes(range(16)), bytes([0x11]) * 32, 0
# FORMAT.md §3.10: label || archive_id || commit_hash || flags
message = b"revault-lockbox v3 signature" + archive_id + commit + bytes([flags])
signature = ed.sign(message) + ml.sign(message)
assert len(signature) == 3373

secret = ed_seed + ml_seed
m_kib, t, p, salt = 8, 1, 1, bytes([0x5a]) * 16
passphrase = b"correct horse battery staple"
head = f"LOCKBOX-SIGNING-KEY-ARGON2ID-1 {m_kib} {t} {p} {salt.hex()}"
kek = Argon2id(salt=salt, length=32, iterations=t, lanes=p, memory_cost=m_kib).derive(passphrase)
sealed = ChaCha20Poly1305(kek).encrypt(bytes(12), secret, head.encode())

out = sys.stdout
print("# Known-answer vectors of docs/KEYS.md, \"Signing keys\" (scripts/gen-signing-vectors.py).", file=out)
for k, v in [
    ("ed25519 seed", ed_seed.hex()),
    ("ml-dsa-65 seed", ml_seed.hex()),
    ("public key", base64.b64encode(public).decode()),
    ("public key sha256", hashlib.sha256(public).hexdigest()),
    ("fingerprint", fingerprint),
    ("archive id", archive_id.hex()),
    ("commit hash", commit.hex()),
    ("flags", str(flags)),
    ("message", message.hex()),
    ("signature", signature.hex()),
    ("key line", "LOCKBOX-SIGNING-KEY-1 " + secret.hex()),
    ("passphrase", passphrase.decode()),
    ("protected key line", f"{head} {sealed.hex()}"),
]:
    print(f"{k}: {v}", file=out)
