"""Semantic versions: parsing, precedence and bumping."""

from minisemver.version import InvalidVersion, Version

__all__ = ["InvalidVersion", "Version"]
