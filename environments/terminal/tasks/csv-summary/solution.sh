#!/bin/bash
# Reference solution: sum units and revenue per region with Python's csv module.
python3 - <<'PY'
import csv
import json

totals = {}
with open("/home/agent/data/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        region = totals.setdefault(row["region"], {"units": 0, "revenue": 0.0})
        region["units"] += int(row["units"])
        region["revenue"] += int(row["units"]) * float(row["unit_price"])
for region in totals.values():
    region["revenue"] = round(region["revenue"], 2)
summary = dict(totals)
summary["top_region"] = max(totals, key=lambda name: totals[name]["revenue"])
with open("/home/agent/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
PY
