"""What a valid token looks like for each integration, and how it is shown (pure).

`FORMATS[name].normalise(raw)` returns the token to store or raises `MalformedToken` with a
message that names the problem (never the token); `mask(token)` is what its owner is shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_CHARACTERS = re.compile(r"^[A-Za-z0-9_]+$")
_LEGACY_GITHUB = re.compile(r"^[a-f0-9]{40}$")  # GitHub tokens before 2021: 40 hex digits, no prefix


class MalformedToken(ValueError):
    """The token cannot be one of this integration's (wrong prefix, characters or length)."""


@dataclass(frozen=True)
class GitHubTokenFormat:
    """GitHub personal access tokens (classic `ghp_…`, fine-grained `github_pat_…`), OAuth tokens
    (`gho_…`, e.g. from `gh auth token`), GitHub App user tokens (`ghu_…`) and pre-2021 tokens.
    Installation (`ghs_`) and refresh (`ghr_`) tokens are not a person's own and are refused."""

    name: str = "github"
    title: str = "GitHub"
    prefixes: tuple[str, ...] = ("github_pat_", "ghp_", "gho_", "ghu_")
    min_length: int = 40
    max_length: int = 255

    def normalise(self, raw: str) -> str:
        """The token without surrounding whitespace; `MalformedToken` if it cannot be a GitHub token."""
        token = raw.strip()
        if not token:
            raise MalformedToken("is empty; paste a GitHub personal access token")
        if len(token) > self.max_length:
            raise MalformedToken(f"is too long for a GitHub token (at most {self.max_length} characters)")
        if not _CHARACTERS.match(token):
            raise MalformedToken(
                "may contain only letters, digits and underscores (paste the token alone, without 'Bearer ')"
            )
        if _LEGACY_GITHUB.match(token):
            return token
        if not token.startswith(self.prefixes):
            raise MalformedToken(
                "must start with ghp_ (a classic personal access token), github_pat_ (a fine-grained one) "
                "or gho_ / ghu_ (an OAuth or GitHub App user token)"
            )
        if len(token) < self.min_length:
            raise MalformedToken(f"is too short for a GitHub token (at least {self.min_length} characters)")
        return token

    def mask(self, token: str) -> str:
        """The token's type prefix and last four characters, e.g. `ghp_…a1B2`."""
        prefix = next((p for p in self.prefixes if token.startswith(p)), "")
        return f"{prefix}…{token[-4:]}"


FORMATS: Mapping[str, GitHubTokenFormat] = {"github": GitHubTokenFormat()}
