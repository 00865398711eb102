"""Checks which files under /home/agent/photos were renamed, and that nothing else changed."""

from pathlib import Path

ROOT = Path("/home/agent/photos")


def test_top_level_photos_renamed():
    assert (ROOT / "photo-0001.jpg").read_text() == "one\n"
    assert (ROOT / "photo-0002.jpg").read_text() == "two\n"


def test_nested_photos_renamed():
    assert (ROOT / "2023" / "photo-0103.jpg").read_text() == "three\n"
    assert (ROOT / "2023" / "summer" / "photo-2044.jpg").read_text() == "four\n"


def test_no_img_photos_left():
    left = [p.name for p in ROOT.rglob("IMG_*") if p.suffix.lower() in (".jpg", ".jpeg")]
    assert left == []


def test_other_files_untouched_and_nothing_else_there():
    assert (ROOT / "notes" / "IMG_notes.txt").read_text() == "keep\n"
    assert (ROOT / "IMG_0005.png").read_text() == "keep\n"
    assert (ROOT / "2023" / "readme.txt").read_text() == "keep\n"
    names = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file())
    assert names == [
        "2023/photo-0103.jpg",
        "2023/readme.txt",
        "2023/summer/photo-2044.jpg",
        "IMG_0005.png",
        "notes/IMG_notes.txt",
        "photo-0001.jpg",
        "photo-0002.jpg",
    ]
