"""Splitting an entry point into a command, exactly as the Go SDK does.

A port of internal/shellwords (Go): blanks (space, tab, newline) separate
words; single quotes keep everything; double quotes keep everything but
backslash escapes of ``"``, ``\\``, ``$`` and backquote; a backslash outside
quotes escapes any character. No shell is run, nothing is expanded. Python's
shlex differs in corner cases, which would let the two SDKs drift.
"""

from __future__ import annotations

from typing import List


def split(s: str) -> List[str]:
    """Splits s into words; raises ValueError on an unterminated quote or a lone trailing backslash."""
    words: List[str] = []
    cur: List[str] = []
    in_word = False
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in " \t\n":
            if in_word:
                words.append("".join(cur))
                cur = []
                in_word = False
        elif c == "\\":
            if i + 1 >= n:
                raise ValueError(f"{s!r} ends with a lone backslash")
            i += 1
            cur.append(s[i])
            in_word = True
        elif c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                raise ValueError(f"{s!r} has an unterminated single quote")
            cur.append(s[i + 1 : end])
            i = end
            in_word = True
        elif c == '"':
            j = i + 1
            while j < n and s[j] != '"':
                if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`':
                    j += 1
                cur.append(s[j])
                j += 1
            if j >= n:
                raise ValueError(f"{s!r} has an unterminated double quote")
            i = j
            in_word = True
        else:
            cur.append(c)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(cur))
    return words


_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-")


def join(words: List[str]) -> str:
    """The command line split() splits into words: plain words as they are,
    others single-quoted (a single quote as '\\'')."""
    out = []
    for w in words:
        if w and all(c in _PLAIN for c in w):
            out.append(w)
        else:
            out.append("'" + w.replace("'", "'\\''") + "'")
    return " ".join(out)
