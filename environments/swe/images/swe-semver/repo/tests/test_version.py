import pytest

from minisemver import InvalidVersion, Version


def v(text):
    return Version.parse(text)


def test_parse_core_prerelease_and_build():
    version = v("1.2.3-rc.1+build.5")
    assert (version.major, version.minor, version.patch) == (1, 2, 3)
    assert version.prerelease == ("rc", "1")
    assert version.build == ("build", "5")
    assert version.is_prerelease


def test_str_round_trips():
    for text in ["0.0.1", "1.2.3-alpha", "1.2.3-alpha.1+sha.5114f85", "10.20.30+meta"]:
        assert str(v(text)) == text


@pytest.mark.parametrize("text", ["1.2", "1.2.3.4", "01.2.3", "1.2.3-", "1.2.3-alpha..1", "v1.2.3"])
def test_invalid_versions_are_rejected(text):
    with pytest.raises(InvalidVersion):
        v(text)


def test_core_versions_compare_numerically():
    assert v("1.9.0") < v("1.10.0")
    assert v("2.0.0") > v("1.99.99")
    assert v("1.0.10") > v("1.0.9")


def test_prerelease_sorts_before_release():
    assert v("1.0.0-alpha") < v("1.0.0")
    assert v("1.0.0") > v("1.0.0-rc.1")


def test_alphanumeric_identifiers_compare_lexically():
    assert v("1.0.0-alpha") < v("1.0.0-beta")
    assert v("1.0.0-rc") > v("1.0.0-beta")


def test_longer_prerelease_wins_a_tie():
    assert v("1.0.0-alpha") < v("1.0.0-alpha.1")


def test_build_metadata_is_ignored():
    assert v("1.0.0+a") == v("1.0.0+b")
    assert len({v("1.0.0+a"), v("1.0.0+b")}) == 1


def test_bumps():
    assert str(v("1.2.3").bump_major()) == "2.0.0"
    assert str(v("1.2.3").bump_minor()) == "1.3.0"
    assert str(v("1.2.3").bump_patch()) == "1.2.4"
    assert str(v("1.2.3-rc.1").bump_patch()) == "1.2.3"


def test_numeric_identifiers_compare_numerically():
    assert v("1.0.0-alpha.2") < v("1.0.0-alpha.10")
    assert v("1.0.0-rc.11") > v("1.0.0-rc.9")


def test_numeric_identifiers_sort_before_alphanumeric():
    assert v("1.0.0-alpha.99") < v("1.0.0-alpha.beta")
    assert v("1.0.0-999") < v("1.0.0-a")


def test_semver_spec_precedence_example():
    chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
    ]
    assert sorted(chain, key=v) == chain
