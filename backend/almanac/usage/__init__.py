"""Usage views: where a user's (or the service's) credits and tokens went."""
