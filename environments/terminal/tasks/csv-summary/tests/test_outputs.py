"""Checks /home/agent/summary.json against totals computed from the task's sales data."""

import json
from pathlib import Path

import pytest

SUMMARY = Path("/home/agent/summary.json")
UNITS = {"north": 15, "south": 12, "east": 8}
REVENUE = {"north": 63.5, "south": 90.0, "east": 32.25}


@pytest.fixture(scope="module")
def summary():
    assert SUMMARY.exists(), "summary.json was not written"
    return json.loads(SUMMARY.read_text())


def test_summary_is_a_json_object(summary):
    assert isinstance(summary, dict)


def test_units_per_region(summary):
    assert {region: summary[region]["units"] for region in UNITS} == UNITS


def test_revenue_per_region(summary):
    for region, revenue in REVENUE.items():
        assert summary[region]["revenue"] == pytest.approx(revenue, abs=0.005)


def test_top_region(summary):
    assert summary["top_region"] == "south"
