"""The filter inside Nova's own filter machinery, with Nova's objects."""

import unittest

from climatenova import client as climate_client
from climatenova import filter as climate_filter
from climatenova.tests import support
from climatenova.tests.support import spec

if support.HAVE_NOVA:
    from nova import objects
    from nova.scheduler import filters
    from nova.scheduler import host_manager

CELL = '00000000-0000-0000-0000-000000000001'


def host_state(nodename, *aggregates):
    state = host_manager.HostState('compute-' + nodename, nodename, CELL)
    state.aggregates = list(aggregates)
    return state


@unittest.skipUnless(support.HAVE_NOVA and support.HAVE_KEYSTONEAUTH,
                     'needs python3-nova')
class NovaTest(unittest.TestCase):

    def setUp(self):
        self.server = support.ClimateServer().start()
        self.addCleanup(self.server.stop)
        self.handler = filters.HostFilterHandler()
        self.hosts = [
            host_state('fake-1'),
            host_state('fake-2', objects.Aggregate(
                name='freepool', metadata={})),
            host_state('fake-3', objects.Aggregate(
                name='r-1', metadata={'availability_zone': 'blazar_r-1',
                                      'blazar:owner': 'p1'})),
        ]

    def make_filter(self, url=None):
        client = climate_client.ClimateClient(
            url or self.server.url, support.ks_session.Session(), timeout=1)
        return climate_filter.ClimateFilter(client=client)

    def test_should_be_a_nova_host_filter_when_loaded_by_class_path(self):
        [cls] = self.handler.get_matching_classes(
            ['climatenova.filter.ClimateFilter'])
        self.assertIs(climate_filter.ClimateFilter, cls)
        self.assertTrue(issubclass(cls, filters.BaseHostFilter))
        self.assertIsInstance(cls(), filters.BaseHostFilter)

    def test_should_post_once_when_nova_filters_a_request(self):
        self.server.answer = lambda body: (200, {
            'hosts': ['fake-3'], 'rejected': {'fake-1': 'x', 'fake-2': 'x'}})
        passed = self.handler.get_filtered_objects(
            [self.make_filter()], self.hosts,
            spec(hints={'reservation': ['r-1']}))
        self.assertEqual([self.hosts[2]], passed)
        self.assertEqual(1, len(self.server.requests))
        self.assertEqual(['fake-1', 'fake-2', 'fake-3'],
                         self.server.requests[0].body['hosts'])
        self.assertEqual({'reservation': 'r-1'},
                         self.server.requests[0].body['hints'])

    def test_should_not_post_when_nova_places_the_next_server(self):
        passed = self.handler.get_filtered_objects(
            [self.make_filter()], self.hosts, spec(), index=1)
        self.assertEqual(self.hosts, passed)
        self.assertEqual([], self.server.requests)

    def test_should_not_post_when_nova_rebuilds(self):
        passed = self.handler.get_filtered_objects(
            [self.make_filter()], self.hosts[2:],
            spec(hints={'_nova_check_type': ['rebuild']}))
        self.assertEqual(self.hosts[2:], passed)
        self.assertEqual([], self.server.requests)

    def test_should_leave_no_host_when_climate_refuses(self):
        self.server.answer = lambda body: (400, {
            'error_code': 400, 'error_message': 'Malformed lease_params'})
        with self.assertLogs('climatenova.filter', 'WARNING'):
            passed = self.handler.get_filtered_objects(
                [self.make_filter()], self.hosts, spec())
        self.assertEqual([], passed)

    def test_should_keep_unmanaged_hosts_when_climate_is_down(self):
        url = 'http://127.0.0.1:%d/v1' % support.closed_port()
        with self.assertLogs('climatenova.filter', 'WARNING'):
            passed = self.handler.get_filtered_objects(
                [self.make_filter(url)], self.hosts, spec())
        self.assertEqual([self.hosts[0]], passed)

    def test_should_read_nova_objects_when_building_the_request(self):
        body = climate_filter.request_body(self.hosts, spec(
            hints={'a': ['1'], 'b': ['1', '2']}, extra_specs={'k': 'v'}))
        self.assertEqual({'a': '1', 'b': ['1', '2']}, body['hints'])
        self.assertEqual({'k': 'v'}, body['flavor_extra_specs'])

    def test_should_send_the_server_count_when_several_are_booted(self):
        request = objects.RequestSpec(num_instances=3)
        body = climate_filter.request_body(self.hosts, request)
        self.assertEqual(3, body['num_instances'])

    def test_should_send_nulls_when_the_spec_fields_are_unset(self):
        body = climate_filter.request_body(self.hosts, objects.RequestSpec())
        self.assertEqual({
            'hosts': ['fake-1', 'fake-2', 'fake-3'], 'project_id': None,
            'user_id': None, 'instance_uuid': None, 'num_instances': 1,
            'hints': {},
            'flavor_extra_specs': {}}, body)


if __name__ == '__main__':
    unittest.main()
