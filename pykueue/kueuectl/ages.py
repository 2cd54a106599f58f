"""Ages and durations as kubectl shows them (``3m12s``, ``5h``, ``12d``)."""

from __future__ import annotations

from datetime import UTC, datetime

MAX_DURATION_S = (2**63 - 1) / 1e9


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 timestamp from an object, or None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def human_duration(seconds_float: float) -> str:
    """apimachinery's HumanDuration: coarser the older, two units at most."""
    seconds = int(seconds_float)  # truncated toward zero, as Go's int(d.Seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(created: object, now: datetime) -> str:
    """The AGE of an object created at ``created`` (a zero time reads as very old)."""
    when = parse_time(created) or datetime(1, 1, 1, tzinfo=UTC)
    # Go's time.Sub saturates at the largest Duration, about 292 years.
    return human_duration(min((now - when).total_seconds(), MAX_DURATION_S))
