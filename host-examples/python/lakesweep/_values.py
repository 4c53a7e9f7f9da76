"""Python values as the planner takes them: times as epoch milliseconds,
durations as milliseconds, location maps as pairs, documents as JSON text.
Conversions only; durations written as text are read by the planner itself
(the grammar documents and the command line use), never here."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Mapping
from typing import Optional, Union

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

#: A time: epoch milliseconds, an aware ``datetime``, or RFC 3339 text.
Time = Union[int, _dt.datetime, str]
#: A duration: milliseconds, a ``timedelta``, or text such as ``"3d"``, ``"1h 30m"``.
Duration = Union[int, _dt.timedelta, str]
#: A location map: ``{"FROM": "TO"}``, ``[("FROM", "TO")]``, ``["FROM=TO"]`` or ``"FROM=TO"``.
LocationMap = Union[Mapping, Iterable, str, None]
#: A JSON document: its text, or a dict.
Document = Union[str, Mapping, None]


def epoch_ms(value: Time, name: str) -> int:
    """``value`` as epoch milliseconds. A naive ``datetime`` is refused
    (which time zone it means is not known)."""
    if isinstance(value, bool):
        raise TypeError(f"{name}: a time, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            value = _dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise ValueError(f"{name}: {value!r} is not an RFC 3339 time (such as 2026-12-01T00:00:00Z)") from None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"{name}: {value!r} has no time zone (give an aware datetime, e.g. tzinfo=timezone.utc)")
        return (value - _EPOCH) // _dt.timedelta(milliseconds=1)
    raise TypeError(f"{name}: a time is epoch milliseconds (int), an aware datetime or RFC 3339 text, not {type(value).__name__}")


def duration_ms(value: Optional[Duration], name: str, parse) -> Optional[int]:
    """``value`` as milliseconds (``None`` stays ``None``: the planner's
    choice); text is read by ``parse`` (the planner's ``parse-duration``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name}: a duration, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.timedelta):
        return value // _dt.timedelta(milliseconds=1)
    if isinstance(value, str):
        return int(parse(value))
    raise TypeError(f"{name}: a duration is milliseconds (int), a timedelta or text such as '3d', not {type(value).__name__}")


def location_map(value: LocationMap) -> list:
    """``value`` as ``[(from, to), ...]``."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, Mapping):
        return [(str(f), str(t)) for f, t in value.items()]
    out = []
    for m in value:
        if isinstance(m, str):
            f, sep, t = m.partition("=")
            if not sep or not f or not t:
                raise ValueError(f"location_map: {m!r} is not FROM=TO")
            out.append((f, t))
        else:
            pair = tuple(m)
            if len(pair) != 2:
                raise ValueError(f"location_map: {m!r} is not a (FROM, TO) pair")
            out.append((str(pair[0]), str(pair[1])))
    return out


def document(value: Document, name: str) -> Optional[str]:
    """A JSON document's text (a dict is written as JSON)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(value)
    raise TypeError(f"{name}: a JSON document is text or a dict, not {type(value).__name__}")
