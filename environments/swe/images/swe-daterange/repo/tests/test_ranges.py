from datetime import date

import pytest

from daterange import DateRange


def r(text):
    return DateRange.parse(text)


def test_parse_and_repr():
    span = r("2024-01-05..2024-01-09")
    assert (span.start, span.end) == (date(2024, 1, 5), date(2024, 1, 9))
    assert repr(span) == "DateRange.parse('2024-01-05..2024-01-09')"


def test_parse_rejects_garbage():
    with pytest.raises(ValueError, match="not a date range"):
        r("2024-01-05/2024-01-09")


def test_end_before_start_is_an_error():
    with pytest.raises(ValueError, match="before it starts"):
        DateRange(date(2024, 2, 2), date(2024, 2, 1))


def test_contains_both_ends():
    span = r("2024-03-10..2024-03-12")
    assert date(2024, 3, 10) in span
    assert date(2024, 3, 12) in span
    assert date(2024, 3, 13) not in span


def test_overlaps_and_intersection():
    a = r("2024-01-01..2024-01-10")
    b = r("2024-01-10..2024-01-20")
    assert a.overlaps(b)
    assert a.intersection(b) == r("2024-01-10..2024-01-10")
    assert a.intersection(r("2024-02-01..2024-02-02")) is None


def test_shifted():
    assert r("2024-02-28..2024-03-01").shifted(1) == r("2024-02-29..2024-03-02")


def test_length_counts_both_ends():
    assert len(r("2024-01-01..2024-01-31")) == 31
    assert len(r("2024-02-27..2024-03-01")) == 4


def test_single_day_range_has_one_day():
    day = r("2024-06-01..2024-06-01")
    assert len(day) == 1
    assert list(day) == [date(2024, 6, 1)]


def test_iteration_includes_last_day():
    days = list(r("2023-12-30..2024-01-02"))
    assert days == [date(2023, 12, 30), date(2023, 12, 31), date(2024, 1, 1), date(2024, 1, 2)]
