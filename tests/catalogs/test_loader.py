"""Every catalog is validated by one loader against its schema; config entries by the same one."""

from __future__ import annotations

import pytest

from rankguard.catalogs.catalog import blocking_catalog
from rankguard.catalogs.driver_terms import term_catalog
from rankguard.catalogs.loader import check_entry, load_catalog, shipped_catalogs
from rankguard.core.errors import InputError


def test_every_shipped_catalog_has_a_schema_and_fits_it():
    names = shipped_catalogs()
    assert {"blocking", "collectives", "driver_terms"} <= set(names)
    for name in names:
        assert load_catalog(name)  # raises InputError naming the file and path when it does not


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"name": "x.wait", "gaurd": "timeout"}, ["config `blocking`", "gaurd"]),
        ({"name": "x.wait", "guard": "sometimes"}, ["guard", "sometimes"]),
        ({"name": "x.wait", "match": "x.wait"}, ["match", "not of type 'array'"]),
        ({"kind": "lock"}, ["'name' is a required property"]),
    ],
)
def test_a_bad_config_blocking_entry_names_the_key(entry: dict, words: list[str]):
    with pytest.raises(InputError) as caught:
        blocking_catalog((entry,))
    for word in words:
        assert word in str(caught.value)


def test_a_bad_config_driver_term_names_the_key():
    with pytest.raises(InputError, match=r"config driver-terms: at element: 'one'"):
        term_catalog(({"name": "pool.free", "element": "one"},))


def test_a_good_config_entry_is_accepted_by_the_shipped_schema():
    check_entry("blocking", {"name": "pkg.Barrier.wait", "kind": "lock", "guard": "timeout"}, "t")
    assert term_catalog(("*.Pool.available_size",)).match("a.Pool.available_size") is not None
