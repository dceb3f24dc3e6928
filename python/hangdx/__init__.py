"""hangdx: names the hang in a distributed deep-learning job.

    >>> import hangdx
    >>> d = hangdx.analyze(["dumps/"])          # folders and/or files
    >>> d["verdict"], d["findings"][0]["kind"], d["findings"][0]["culprit_ranks"]

The returned dict is the same JSON document as ``hangdx analyze --format json``
(schema: docs/json-schema.md, versioned by ``schema_version``).
"""
from __future__ import annotations

import json
import operator
import os
from typing import Dict, Iterable, List, Optional, Tuple, Union

from . import _hangdx

__all__ = ["analyze", "render", "formats", "Error"]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]

# The CLI's bounds (hangdx/model/job.h kMaxRank): checked here too, so that an
# out-of-range value is refused with the CLI's words instead of silently
# dropping a rank (negative) or allocating per rank until MemoryError (huge).
_MAX_WORLD_SIZE = 1 << 24


class Error(ValueError):
    """Unusable invocation: a path that does not exist, an unknown format."""


def _checked_int(value, what: str, lo: int, hi: int) -> int:
    """Returns ``value`` as an int if it is an integer in ``lo..hi``; raises
    :class:`Error` worded as the CLI's range check otherwise."""
    try:
        n = operator.index(value)  # an int (not a float or a str that looks like one)
    except TypeError:
        raise Error("%s: %r is not an integer" % (what, value)) from None
    if not lo <= n <= hi:
        raise Error("%s: Value %d not in range %d to %d" % (what, n, lo, hi))
    return n


def render(paths: Union[PathLike, Iterable[PathLike]], format: str = "text", *,
           world_size: Optional[int] = None, threads: int = 0,
           rank_of: Optional[Dict[str, int]] = None, assume_timed_out: bool = False) -> tuple:
    """Analyzes ``paths`` and returns ``(report: str, exit_code: int)``.

    ``format`` is "text", "json" or "dot"; ``exit_code`` is the CLI's: 0 nothing
    wrong found, 1 a hang or mismatch found, 2 unusable input. ``world_size``
    (ranks, 1 to 16777216) is needed for gloo dumps of jobs whose last rank
    left no dump; ``rank_of`` maps a file path to its rank (0 to
    16777215) when the name does not say it, e.g. ``{"dumps/a.pkl": 3}``;
    ``threads`` = 0 parses with all cores. Raises :class:`Error`, also for
    a world size or rank out of those ranges.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    size = -1 if world_size is None else _checked_int(world_size, "world_size", 1, _MAX_WORLD_SIZE)
    ranks = {os.fspath(k): _checked_int(v, "rank given for %s" % os.fspath(k), 0, _MAX_WORLD_SIZE - 1)
             for k, v in (rank_of or {}).items()}
    try:
        text, code = _hangdx.run([os.fspath(p) for p in paths], format, size, int(threads), ranks,
                                 bool(assume_timed_out))
    except ValueError as e:
        raise Error(str(e)) from None
    return text.decode("utf-8", errors="replace"), code


def formats() -> List[Tuple[str, str]]:
    """Returns the input formats hangdx reads as ``(name, description)``
    pairs, in the order files are sniffed: the list ``hangdx formats``
    prints, e.g. ``("nccl-log", "NCCL_DEBUG=INFO log (...)")``.
    """
    return [(name, description) for name, description in _hangdx.formats()]


def analyze(paths: Union[PathLike, Iterable[PathLike]], **kwargs) -> dict:
    """Analyzes what the ranks of a job left behind, in these formats
    (:func:`formats` describes each):

{formats}

    ``paths``: one path or several; a folder is searched recursively and each
    file's format is sniffed from its content. Keyword arguments as for
    :func:`render`. Returns the diagnosis as a dict (the CLI's JSON document):
    ``hang`` (bool), ``verdict`` (str), ``findings`` (list, most important
    first; each has ``kind``, ``culprit_ranks``, ``pg``, ``seq``, ``op``,
    ``roles``, ``evidence``, ``fix_hint``), ``process_groups``, ``ranks``,
    ``wait_for_graph``, ``diagnostics``. Raises :class:`Error`.
    """
    text, _ = render(paths, "json", **kwargs)
    return json.loads(text)


# The format list of analyze's docstring comes from the table the loader
# uses (hangdx/ingest/formats.cc), so it names every format.
if analyze.__doc__:  # None under python -OO
    analyze.__doc__ = analyze.__doc__.replace(
        "{formats}", "\n".join("    * ``%s``: %s" % f for f in formats()))
