"""Token encryption: a round trip, bound to its owner, refused under another key or when altered."""

import pytest

from almanac.integrations.crypto import TokenCipher, UnreadableToken

TOKEN = "ghp_" + "A1b2C3d4" * 4 + "wxyz"
SECRET = "s" * 40


def test_a_token_round_trips_and_the_ciphertext_does_not_contain_it() -> None:
    cipher = TokenCipher(SECRET)
    blob = cipher.encrypt(TOKEN, context="github:alice")
    assert cipher.decrypt(blob, context="github:alice") == TOKEN
    assert TOKEN.encode() not in blob and TOKEN[4:12].encode() not in blob and TOKEN[-4:].encode() not in blob
    assert cipher.encrypt(TOKEN, context="github:alice") != blob  # a fresh nonce each time


def test_a_ciphertext_copied_to_another_user_does_not_decrypt() -> None:
    cipher = TokenCipher(SECRET)
    blob = cipher.encrypt(TOKEN, context="github:alice")
    with pytest.raises(UnreadableToken):
        cipher.decrypt(blob, context="github:mallory")


def test_another_key_or_an_altered_value_is_refused() -> None:
    blob = TokenCipher(SECRET).encrypt(TOKEN, context="github:alice")
    other = TokenCipher("t" * 40)
    assert other.key_id != TokenCipher(SECRET).key_id and TokenCipher(SECRET).key_id == TokenCipher(SECRET).key_id
    with pytest.raises(UnreadableToken):
        other.decrypt(blob, context="github:alice")
    altered = blob[:-1] + bytes([blob[-1] ^ 1])
    with pytest.raises(UnreadableToken):
        TokenCipher(SECRET).decrypt(altered, context="github:alice")
    with pytest.raises(UnreadableToken):
        TokenCipher(SECRET).decrypt(b"\x02" + blob[1:], context="github:alice")


def test_the_key_id_does_not_reveal_the_secret() -> None:
    cipher = TokenCipher(SECRET)
    assert len(cipher.key_id) == 16 and SECRET[:8] not in cipher.key_id
    with pytest.raises(ValueError):
        TokenCipher("")
