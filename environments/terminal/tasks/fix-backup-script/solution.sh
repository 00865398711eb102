#!/bin/bash
# Reference solution: quote paths, glob instead of parsing ls, create the destination, fix the message.
cat > /app/backup.sh <<'SCRIPT'
#!/bin/bash
set -e
# Copies every .txt file of /app/data into /app/backup and says how many it copied.
SRC=/app/data
DEST=/app/backup
mkdir -p "$DEST"
count=0
for f in "$SRC"/*.txt; do
  [ -e "$f" ] || continue
  cp "$f" "$DEST/"
  count=$((count + 1))
done
echo "copied $count files"
SCRIPT
