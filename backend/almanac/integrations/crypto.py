"""Encryption of integration tokens at rest — the only module that does cryptography.

AES-256-GCM under a key derived with HKDF-SHA256 from the server's secret (`SECRET_KEY`, or the
generated `<DATA_DIR>/secret-key` on a local run). Each value is bound to its row (the associated
data names the user and the integration), so a ciphertext copied into another user's row does not
decrypt there. Stored form: a version byte, a random 12-byte nonce, the ciphertext and its tag.

Errors: `UnreadableToken` — the value was encrypted under another key, or was altered.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = 1
NONCE_BYTES = 12
_SALT = b"almanac/integration-tokens"
_INFO = b"AES-256-GCM key v1"


class UnreadableToken(Exception):
    """The stored value cannot be decrypted with the current key (another key, or tampering)."""


class TokenCipher:
    """Encrypts and decrypts tokens with a key derived from `secret`."""

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("the secret key is empty")
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=_INFO).derive(secret.encode("utf-8"))
        self._aead = AESGCM(key)
        # Names the key without revealing it: rows written under another key are recognised as such.
        self.key_id = hmac.new(key, b"key id", hashlib.sha256).hexdigest()[:16]

    def encrypt(self, token: str, *, context: str) -> bytes:
        """`token` encrypted and bound to `context` (e.g. "github:<user id>")."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, token.encode("utf-8"), context.encode("utf-8"))
        return bytes([VERSION]) + nonce + sealed

    def decrypt(self, blob: bytes, *, context: str) -> str:
        """The token in `blob`, which must have been encrypted with this key for this `context`."""
        if len(blob) <= 1 + NONCE_BYTES or blob[0] != VERSION:
            raise UnreadableToken("not a token encrypted by this server")
        nonce, sealed = blob[1 : 1 + NONCE_BYTES], blob[1 + NONCE_BYTES :]
        try:
            return self._aead.decrypt(nonce, sealed, context.encode("utf-8")).decode("utf-8")
        except InvalidTag:
            raise UnreadableToken("encrypted under another key, or altered") from None
