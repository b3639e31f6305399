"""Players beyond the built-ins: the search player, the trained-checkpoint loader, the shipped agents.

Importing this package registers nothing: :mod:`uno_env.policy` finds ``"search"`` and the shipped agents by
name when they are first asked for.
"""
