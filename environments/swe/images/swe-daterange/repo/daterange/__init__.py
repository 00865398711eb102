"""Inclusive ranges of calendar days."""

from daterange.ranges import DateRange

__all__ = ["DateRange"]
