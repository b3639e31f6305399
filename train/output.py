"""Text from files made safe to print, and the one-line message of a file the programs could not read or write.

A player's name in a saved game, a checkpoint's file name or a file name in an evaluation folder can hold terminal
escape sequences (set the window title, clear the screen, rewrite earlier lines): :func:`printable` shows their
characters as escapes instead. A full disk or a folder the user may not write ends a program with one line naming
the file (:func:`file_error`), not a traceback.
"""

from __future__ import annotations

import errno

#: The errors of a file system that is full, rather than of a file.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def printable(text: str) -> str:
    """``text`` with every character a terminal would not print as itself (control characters such as ESC, line
    breaks, bidirectional overrides) written as its Python escape, ``\\x1b`` and the like."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def file_error(error: OSError) -> str | None:
    """One line saying which file could not be read or written and why, or None for an error of no file (a
    connection refused, say), which is no bad input and keeps its traceback."""
    name = error.filename if error.filename is not None else error.filename2
    if error.errno in DISK_FULL:
        return f"disk full writing {printable(str(name or 'a file'))}; free some space and run the command again"
    if name is None:
        return None
    return f"{printable(str(name))}: {error.strerror or error}"
