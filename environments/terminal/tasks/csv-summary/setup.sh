#!/bin/bash
# Writes the sales data the task reads (run at reset as the sandbox user).
set -euo pipefail
mkdir -p /home/agent/data
cat > /home/agent/data/sales.csv <<'CSV'
region,product,units,unit_price
north,widget,10,2.50
south,widget,4,2.50
north,gadget,3,10.00
east,gizmo,7,4.25
south,gadget,8,10.00
east,widget,1,2.50
north,gizmo,2,4.25
CSV
