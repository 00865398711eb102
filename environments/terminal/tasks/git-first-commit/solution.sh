#!/bin/bash
# Reference solution.
set -e
mkdir -p /home/agent/project
cd /home/agent/project
git init -q -b main
printf '# Project\n' > README.md
git add README.md
git -c user.name=Agent -c user.email=agent@example.com commit -q -m "Initial commit"
git branch feature
