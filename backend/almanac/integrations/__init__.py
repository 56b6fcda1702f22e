"""Per-user tokens for outside services (GitHub): checked, encrypted at rest, shown masked.

`crypto.py` is the only module that does cryptography; `secret_key.py` says where the server's
key comes from; `formats.py` knows what a valid token looks like; `vault.py` is the service the
API and the MCP client use.
"""

from almanac.integrations.formats import FORMATS, MalformedToken
from almanac.integrations.vault import TokensDisabled, TokenStatus, TokenVault

__all__ = ["FORMATS", "MalformedToken", "TokenStatus", "TokenVault", "TokensDisabled"]
