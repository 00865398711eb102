"""A semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]) and its precedence rules."""

import re
from functools import total_ordering

_IDENTIFIERS = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_PATTERN = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    rf"(?:-({_IDENTIFIERS}))?"
    rf"(?:\+({_IDENTIFIERS}))?$"
)


class InvalidVersion(ValueError):
    """The text is not a semantic version."""


@total_ordering
class Version:
    def __init__(self, major, minor, patch, prerelease=(), build=()):
        self.major = major
        self.minor = minor
        self.patch = patch
        self.prerelease = tuple(prerelease)
        self.build = tuple(build)

    @classmethod
    def parse(cls, text):
        match = _PATTERN.match(text.strip())
        if match is None:
            raise InvalidVersion(f"not a semantic version: {text!r}")
        major, minor, patch, prerelease, build = match.groups()
        return cls(
            int(major),
            int(minor),
            int(patch),
            prerelease.split(".") if prerelease else (),
            build.split(".") if build else (),
        )

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return f"Version.parse({str(self)!r})"

    @property
    def is_prerelease(self):
        return bool(self.prerelease)

    def _core(self):
        return (self.major, self.minor, self.patch)

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        # Build metadata does not take part in precedence.
        return self._core() == other._core() and self.prerelease == other.prerelease

    def __hash__(self):
        return hash((self._core(), self.prerelease))

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        if self._core() != other._core():
            return self._core() < other._core()
        # A pre-release sorts before the release it precedes.
        if not self.prerelease:
            return False
        if not other.prerelease:
            return True
        return _compare_prerelease(self.prerelease, other.prerelease) < 0

    def bump_major(self):
        return Version(self.major + 1, 0, 0)

    def bump_minor(self):
        return Version(self.major, self.minor + 1, 0)

    def bump_patch(self):
        if self.prerelease:
            return Version(self.major, self.minor, self.patch)
        return Version(self.major, self.minor, self.patch + 1)


def _compare_identifiers(a, b):
    """-1, 0 or 1 as the pre-release identifier a sorts before, with or after b."""
    return (a > b) - (a < b)


def _compare_prerelease(left, right):
    """Compares two pre-release tags identifier by identifier; a longer tag wins a tie."""
    for a, b in zip(left, right):
        order = _compare_identifiers(a, b)
        if order != 0:
            return order
    return (len(left) > len(right)) - (len(left) < len(right))
