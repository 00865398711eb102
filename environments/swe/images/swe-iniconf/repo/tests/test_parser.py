import pytest

from iniconf import ParseError, parse


def test_sections_and_keys():
    config = parse("[server]\nHost = example.org\nport = 8080\n\n[client]\nretries=3\n")
    assert config == {"server": {"host": "example.org", "port": "8080"}, "client": {"retries": "3"}}
    assert config.get_int("server", "port") == 8080


def test_colon_separator():
    assert parse("[a]\nname: value\n")["a"]["name"] == "value"


def test_full_line_comments_are_skipped():
    config = parse("; top\n[a]\n# note\nkey = 1\n  ; indented\n")
    assert config == {"a": {"key": "1"}}


def test_inline_comment_is_removed():
    config = parse("[a]\nkey = value ; explained\nother = x # why\n")
    assert config["a"] == {"key": "value", "other": "x"}


def test_marker_without_space_is_part_of_value():
    assert parse("[a]\nurl = http://host/#anchor\n")["a"]["url"] == "http://host/#anchor"


def test_quotes_are_stripped():
    assert parse('[a]\ngreeting = "hello world"\n')["a"]["greeting"] == "hello world"


def test_empty_quoted_value():
    assert parse('[a]\nempty = ""\n')["a"]["empty"] == ""


def test_key_outside_section_is_an_error():
    with pytest.raises(ParseError, match="line 1"):
        parse("key = value\n")


def test_bad_header_is_an_error():
    with pytest.raises(ParseError, match="line 2"):
        parse("[a]\n[broken\n")


def test_booleans():
    config = parse("[f]\non = yes\noff = False\nodd = maybe\n")
    assert config.get_bool("f", "on") is True
    assert config.get_bool("f", "off") is False
    with pytest.raises(ValueError):
        config.get_bool("f", "odd")


def test_comment_marker_inside_quotes_is_kept():
    config = parse('[a]\npassword = "s3cret ;-) # not a comment"\n')
    assert config["a"]["password"] == "s3cret ;-) # not a comment"


def test_quoted_value_followed_by_comment():
    config = parse('[a]\nmotto = "work ; play"   ; the house rule\n')
    assert config["a"]["motto"] == "work ; play"
