#!/bin/bash
# Creates the photo folder (run at reset as the sandbox user).
set -euo pipefail
root=/home/agent/photos
mkdir -p "$root/2023/summer" "$root/notes"
echo one > "$root/IMG_0001.JPG"
echo two > "$root/IMG_0002.jpeg"
echo three > "$root/2023/IMG_0103.jpg"
echo four > "$root/2023/summer/IMG_2044.JPEG"
echo keep > "$root/notes/IMG_notes.txt"
echo keep > "$root/IMG_0005.png"
echo keep > "$root/2023/readme.txt"
