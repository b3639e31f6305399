"""Players beyond the built-ins: the search player, the trained-checkpoint loader, the shipped agents.

Importing this package registers nothing: ``"search"`` and the shipped agents reach :func:`uno_env.make_policy` by
the entry points this project declares in pyproject.toml (groups ``uno_rl.policies`` and
``uno_rl.policy_catalogues``), which :mod:`uno_env.policy` reads from the installed metadata and imports on first use.
"""
