#!/bin/bash
set -e
# Copies every .txt file of /app/data into /app/backup and says how many it copied.
SRC=/app/data
DEST=/app/backup
count=0
for f in $(ls $SRC/*.txt); do
  cp $f $DEST/
  count=$((count + 1))
done
echo "copied $count file"
