"""A range of calendar days; `start` and `end` both belong to it."""

from datetime import date, timedelta


class DateRange:
    def __init__(self, start, end):
        if end < start:
            raise ValueError(f"range ends ({end}) before it starts ({start})")
        self.start = start
        self.end = end

    @classmethod
    def parse(cls, text):
        """Reads 'YYYY-MM-DD..YYYY-MM-DD'."""
        try:
            first, last = text.split("..")
            return cls(date.fromisoformat(first.strip()), date.fromisoformat(last.strip()))
        except ValueError as error:
            raise ValueError(f"not a date range: {text!r} ({error})") from None

    def __repr__(self):
        return f"DateRange.parse('{self.start.isoformat()}..{self.end.isoformat()}')"

    def __eq__(self, other):
        return isinstance(other, DateRange) and (self.start, self.end) == (other.start, other.end)

    def __contains__(self, day):
        return self.start <= day <= self.end

    def _day_count(self):
        return (self.end - self.start).days

    def __len__(self):
        return self._day_count()

    def __iter__(self):
        for offset in range(self._day_count()):
            yield self.start + timedelta(days=offset)

    def overlaps(self, other):
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other):
        """The days in both ranges, or None."""
        if not self.overlaps(other):
            return None
        return DateRange(max(self.start, other.start), min(self.end, other.end))

    def shifted(self, days):
        step = timedelta(days=days)
        return DateRange(self.start + step, self.end + step)
