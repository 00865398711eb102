"""Reading INI configuration text."""

from iniconf.parser import Config, ParseError, parse

__all__ = ["Config", "ParseError", "parse"]
