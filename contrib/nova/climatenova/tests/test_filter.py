"""The filter's decisions, with a stub in place of the HTTP client."""

import unittest

from climatenova import client as climate_client
from climatenova import filter as climate_filter
from climatenova.tests.support import INSTANCE, aggregate, host, spec


class StubClient(object):
    """Records each body; answers with ``result`` or raises it."""

    def __init__(self, result):
        self.result = result
        self.bodies = []
        self.explains = []

    def ask(self, body, explain=False):
        self.bodies.append(body)
        self.explains.append(explain)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def candidates():
    return [host('fake-1'),
            host('fake-2', aggregate('freepool')),
            host('fake-3', aggregate('r-1', zone='blazar_r-1')),
            host('fake-4', aggregate('rack-1'))]


def names(hosts):
    return [h.nodename for h in hosts]


class FilterAllTest(unittest.TestCase):

    def run_filter(self, result, spec_obj=None, hosts=None):
        stub = StubClient(result)
        flt = climate_filter.ClimateFilter(client=stub)
        hosts = candidates() if hosts is None else hosts
        passed = flt.filter_all(hosts, spec_obj or spec())
        return names(list(passed)), stub

    def test_should_pass_the_named_hosts_in_input_order_when_climate_answers(
            self):
        passed, stub = self.run_filter(
            (['fake-4', 'unknown', 'fake-1', 'fake-3'], {'fake-2': 'no'}))
        self.assertEqual(['fake-1', 'fake-3', 'fake-4'], passed)
        self.assertEqual(1, len(stub.bodies))

    def test_should_send_every_candidate_and_the_request_when_asking(self):
        _, stub = self.run_filter(([], {}), spec(
            hints={'reservation': ['r-1'], 'group': ['g1', 'g2']},
            extra_specs={'hw:cpu_policy': 'dedicated'}))
        self.assertEqual({
            'hosts': ['fake-1', 'fake-2', 'fake-3', 'fake-4'],
            'project_id': 'p1',
            'user_id': 'u1',
            'instance_uuid': INSTANCE,
            'num_instances': 1,
            'hints': {'reservation': 'r-1', 'group': ['g1', 'g2']},
            'flavor_extra_specs': {'hw:cpu_policy': 'dedicated'},
        }, stub.bodies[0])

    def test_should_pass_no_host_when_climate_refuses(self):
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed, _ = self.run_filter(
                climate_client.Refused('HTTP 400: Malformed lease_params'))
        self.assertEqual([], passed)
        self.assertIn('Malformed lease_params', logs.output[0])
        self.assertIn(INSTANCE, logs.output[0])

    def test_should_refuse_only_managed_hosts_when_climate_is_unavailable(
            self):
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed, _ = self.run_filter(
                climate_client.Unavailable('HTTP 503: down'))
        self.assertEqual(['fake-1', 'fake-4'], passed)
        self.assertIn('could not be asked', logs.output[0])
        self.assertIn('HTTP 503: down', logs.output[0])

    def test_should_fail_safe_when_the_client_breaks_unexpectedly(self):
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed, _ = self.run_filter(RuntimeError('bug'))
        self.assertEqual(['fake-1', 'fake-4'], passed)
        self.assertIn('RuntimeError: bug', logs.output[0])

    def test_should_fail_safe_when_the_client_cannot_be_configured(self):
        flt = climate_filter.ClimateFilter()

        def broken():
            raise climate_client.Unavailable('[climate] url is not set')
        flt._get_client = broken
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = flt.filter_all(candidates(), spec())
        self.assertEqual(['fake-1', 'fake-4'], names(passed))
        self.assertIn('url is not set', logs.output[0])

    def test_should_pass_every_host_unasked_when_nova_rebuilds(self):
        passed, stub = self.run_filter(
            ([], {}), spec(hints={'_nova_check_type': ['rebuild']}))
        self.assertEqual(['fake-1', 'fake-2', 'fake-3', 'fake-4'], passed)
        self.assertEqual([], stub.bodies)

    def test_should_not_ask_when_there_is_no_candidate(self):
        passed, stub = self.run_filter(([], {}), hosts=[])
        self.assertEqual([], passed)
        self.assertEqual([], stub.bodies)

    def test_should_ignore_names_that_are_not_strings_when_answered(self):
        passed, _ = self.run_filter(([['fake-1'], {'a': 1}, 'fake-2'], {}))
        self.assertEqual(['fake-2'], passed)

    def test_should_log_one_bounded_line_when_thousands_are_rejected(self):
        rejected = dict(('h%d' % i, 'reason %d ' % (i % 40) + 'x' * 500)
                        for i in range(5000))
        with self.assertLogs('climatenova.filter', 'INFO') as logs:
            self.run_filter((['fake-1'], rejected))
        self.assertEqual(1, len(logs.records))
        line = logs.records[0].getMessage()
        self.assertLess(len(line), 2000)
        self.assertIn('1 of 4', line)
        self.assertIn('35 more reasons', line)

    def test_should_not_ask_for_reasons_when_logging_at_info(self):
        with self.assertLogs('climatenova.filter', 'INFO') as logs:
            passed, stub = self.run_filter((['fake-1'], None))
        self.assertEqual(['fake-1'], passed)
        self.assertEqual([False], stub.explains)
        self.assertEqual(
            ['Climate passed 1 of 4 host(s) for instance %s' % INSTANCE],
            [record.getMessage() for record in logs.records])

    def test_should_ask_for_reasons_and_log_them_when_logging_at_debug(self):
        with self.assertLogs('climatenova.filter', 'DEBUG') as logs:
            passed, stub = self.run_filter(
                (['fake-1'], {'fake-2': 'in the pool', 'fake-3': 'in r-1'}))
        self.assertEqual(['fake-1'], passed)
        self.assertEqual([True], stub.explains)
        line = logs.records[0].getMessage()
        self.assertIn('in the pool (1: fake-2)', line)
        self.assertIn('in r-1 (1: fake-3)', line)


class OnePerRequestTest(unittest.TestCase):

    def test_should_run_once_per_request_when_several_servers_boot(self):
        flt = climate_filter.ClimateFilter(client=StubClient(([], {})))
        self.assertTrue(flt.run_filter_once_per_request)
        self.assertTrue(flt.run_filter_for_index(0))
        self.assertFalse(flt.run_filter_for_index(1))

    def test_should_ask_about_the_one_host_when_asked_per_host(self):
        stub = StubClient((['fake-2'], {}))
        flt = climate_filter.ClimateFilter(client=stub)
        self.assertTrue(flt.host_passes(host('fake-2'), spec()))
        self.assertFalse(flt.host_passes(host('fake-9'), spec()))
        self.assertEqual([['fake-2'], ['fake-9']],
                         [body['hosts'] for body in stub.bodies])


class FlatHintsTest(unittest.TestCase):

    def test_should_flatten_only_single_values_when_sending_hints(self):
        self.assertEqual(
            {'a': 'x', 'b': ['x', 'y'], 'c': [], 'd': 'plain'},
            climate_filter.flat_hints(
                {'a': ['x'], 'b': ['x', 'y'], 'c': [], 'd': 'plain'}))

    def test_should_send_no_hints_when_nova_has_none(self):
        self.assertEqual({}, climate_filter.flat_hints(None))


if __name__ == '__main__':
    unittest.main()
