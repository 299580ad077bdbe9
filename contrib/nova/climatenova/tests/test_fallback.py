"""The fail-safe rule: which hosts Climate manages, from aggregates alone."""

import types
import unittest

from climatenova import fallback
from climatenova.tests.support import aggregate, host


class IsManagedTest(unittest.TestCase):

    def test_should_be_managed_when_in_the_freepool(self):
        self.assertTrue(fallback.is_managed(host('a', aggregate('freepool'))))

    def test_should_be_managed_when_in_the_recycle_pool(self):
        self.assertTrue(fallback.is_managed(host('a', aggregate('recycle'))))

    def test_should_be_managed_when_a_zone_has_the_blazar_prefix(self):
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('r-1', zone='blazar_r-1'))))

    def test_should_be_managed_when_a_zone_has_the_legacy_prefix(self):
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('r-1', zone='blazar:r-1'))))

    def test_should_be_managed_when_an_aggregate_has_an_owner(self):
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('r-1', **{'blazar:owner': 'p1'}))))

    def test_should_be_managed_when_an_aggregate_names_a_reservation(self):
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('r-1', reservation='r-1'))))

    def test_should_be_managed_when_only_one_of_many_aggregates_is(self):
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('rack-1'), aggregate('freepool'))))

    def test_should_not_be_managed_when_only_in_plain_aggregates(self):
        self.assertFalse(fallback.is_managed(
            host('a', aggregate('rack-1', zone='nova'),
                 aggregate('shared', gpu='true'))))

    def test_should_not_be_managed_when_the_prefix_is_not_at_the_start(self):
        self.assertFalse(fallback.is_managed(
            host('a', aggregate('z', zone='az-blazar_1'))))

    def test_should_not_be_managed_when_in_no_aggregate(self):
        self.assertFalse(fallback.is_managed(host('a')))
        self.assertFalse(fallback.is_managed(
            types.SimpleNamespace(nodename='a', aggregates=None)))

    def test_should_read_the_zone_from_metadata_when_not_an_attribute(self):
        agg = types.SimpleNamespace(
            name='r-1', metadata={'availability_zone': 'blazar_r-1'})
        self.assertTrue(fallback.is_managed(host('a', agg)))

    def test_should_know_a_renamed_freepool_and_zone_prefix(self):
        renamed = dict(freepool='free-hosts', zone_prefix='site_')
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('free-hosts')), **renamed))
        self.assertTrue(fallback.is_managed(
            host('a', aggregate('r-1', zone='site_r-1')), **renamed))
        self.assertFalse(fallback.is_managed(
            host('a', aggregate('freepool')), **renamed))
        self.assertEqual(['b'], [h.nodename for h in fallback.unmanaged(
            [host('a', aggregate('free-hosts')), host('b')], **renamed)])

    def test_should_keep_order_when_listing_unmanaged_hosts(self):
        hosts = [host('a'), host('b', aggregate('freepool')), host('c')]
        self.assertEqual(['a', 'c'],
                         [h.nodename for h in fallback.unmanaged(hosts)])


if __name__ == '__main__':
    unittest.main()
