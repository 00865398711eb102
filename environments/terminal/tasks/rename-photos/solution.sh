#!/bin/bash
# Reference solution: find the matching names case-insensitively and move each within its folder.
find /home/agent/photos -type f -regextype posix-extended -iregex '.*/IMG_[0-9]+\.(jpg|jpeg)' -print0 |
  while IFS= read -r -d '' file; do
    name=$(basename "$file")
    digits=$(echo "$name" | sed -E 's/^IMG_([0-9]+)\..*$/\1/')
    mv "$file" "$(dirname "$file")/photo-$digits.jpg"
  done
