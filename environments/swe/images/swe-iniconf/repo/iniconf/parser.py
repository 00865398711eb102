"""Parses INI text into sections of string values."""

COMMENT_MARKERS = (";", "#")
TRUE_WORDS = {"1", "yes", "true", "on"}
FALSE_WORDS = {"0", "no", "false", "off"}


class ParseError(ValueError):
    """The text is not valid INI; the message names the line."""


class Config(dict):
    """Section name -> {key: value}; keys are lower-cased, values are strings."""

    def get_int(self, section, key):
        return int(self[section][key])

    def get_bool(self, section, key):
        word = self[section][key].lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ValueError(f"[{section}] {key} = {word!r} is not a boolean")


def parse(text):
    config = Config()
    section = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(COMMENT_MARKERS):
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ParseError(f"line {number}: bad section header {raw!r}")
            section = line[1:-1].strip()
            config.setdefault(section, {})
            continue
        key, value = _split_assignment(line, number)
        if section is None:
            raise ParseError(f"line {number}: {key!r} is outside any section")
        config[section][key] = _unquote(_strip_inline_comment(value))
    return config


def _split_assignment(line, number):
    positions = [line.find(sep) for sep in ("=", ":") if sep in line]
    if not positions:
        raise ParseError(f"line {number}: expected 'key = value', got {line!r}")
    at = min(positions)
    key = line[:at].strip().lower()
    if not key:
        raise ParseError(f"line {number}: missing key in {line!r}")
    return key, line[at + 1 :].strip()


def _strip_inline_comment(value):
    """Drops a comment that starts with ';' or '#' after whitespace."""
    for index, char in enumerate(value):
        if char in COMMENT_MARKERS and index > 0 and value[index - 1].isspace():
            return value[:index].rstrip()
    return value


def _unquote(value):
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value
