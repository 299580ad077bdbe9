"""The filter against a real local HTTP server playing Climate."""

import time
import unittest

from climatenova import client as climate_client
from climatenova import filter as climate_filter
from climatenova.tests import support
from climatenova.tests.support import INSTANCE, aggregate, host, spec

if support.HAVE_KEYSTONEAUTH:
    from keystoneauth1 import token_endpoint

MANAGED_REFUSED = ['fake-1', 'fake-4']


def candidates():
    return [host('fake-1'),
            host('fake-2', aggregate('freepool')),
            host('fake-3', aggregate('r-1', zone='blazar_r-1')),
            host('fake-4', aggregate('rack-1'))]


@unittest.skipUnless(support.HAVE_KEYSTONEAUTH, 'needs keystoneauth1')
class HttpTest(unittest.TestCase):

    def setUp(self):
        self.server = support.ClimateServer().start()
        self.addCleanup(self.server.stop)

    def make_filter(self, url=None, auth=None, timeout=1, explain=False):
        session = support.ks_session.Session(auth=auth)
        client = climate_client.ClimateClient(
            url or self.server.url, session, timeout=timeout,
            explain=explain)
        return climate_filter.ClimateFilter(client=client)

    def run_filter(self, spec_obj=None, **kwargs):
        passed = self.make_filter(**kwargs).filter_all(
            candidates(), spec_obj or spec())
        return [h.nodename for h in passed]

    def test_should_post_once_with_the_request_when_filtering(self):
        self.server.answer = lambda body: (200, {
            'hosts': ['fake-4', 'fake-2'],
            'rejected': {'fake-1': 'not in r-1', 'fake-3': 'not in r-1'}})
        passed = self.run_filter(spec(
            hints={'reservation': ['r-1'], 'lease_params': ['{"a": 1}'],
                   'group': ['g1', 'g2']},
            extra_specs={'aggregate_instance_extra_specs:reservation': 'r'}))
        self.assertEqual(['fake-2', 'fake-4'], passed)
        self.assertEqual(1, len(self.server.requests))
        request = self.server.requests[0]
        self.assertEqual('/v1/scheduler/filter', request.path)
        self.assertEqual('application/json', request.headers['Content-Type'])
        self.assertEqual({
            'hosts': ['fake-1', 'fake-2', 'fake-3', 'fake-4'],
            'project_id': 'p1',
            'user_id': 'u1',
            'instance_uuid': INSTANCE,
            'num_instances': 1,
            'hints': {'reservation': 'r-1', 'lease_params': '{"a": 1}',
                      'group': ['g1', 'g2']},
            'flavor_extra_specs': {
                'aggregate_instance_extra_specs:reservation': 'r'},
        }, request.body)

    def test_should_pass_the_named_hosts_when_the_answer_has_no_reasons(
            self):
        self.server.answer = lambda body: (200, {'hosts': ['fake-2']})
        with self.assertLogs('climatenova.filter', 'INFO') as logs:
            passed = self.run_filter()
        self.assertEqual(['fake-2'], passed)
        self.assertEqual('/v1/scheduler/filter', self.server.requests[0].path)
        self.assertIn('passed 1 of 4', logs.records[0].getMessage())

    def test_should_ask_for_reasons_when_configured_to_explain(self):
        self.server.answer = lambda body: (200, {
            'hosts': ['fake-2'], 'rejected': {'fake-1': 'not in r-1'}})
        with self.assertLogs('climatenova.filter', 'INFO') as logs:
            passed = self.run_filter(explain=True)
        self.assertEqual(['fake-2'], passed)
        self.assertEqual('/v1/scheduler/filter?explain=true',
                         self.server.requests[0].path)
        self.assertIn('not in r-1 (1: fake-1)', logs.records[0].getMessage())

    def test_should_send_the_sessions_token_when_authenticated(self):
        self.run_filter(auth=token_endpoint.Token(None, 'tok-123'))
        self.assertEqual('tok-123',
                         self.server.requests[0].headers.get('X-Auth-Token'))

    def test_should_send_no_token_when_there_is_no_auth(self):
        self.run_filter()
        self.assertNotIn('X-Auth-Token', self.server.requests[0].headers)

    def test_should_ask_the_same_path_when_the_url_ends_with_a_slash(self):
        self.run_filter(url=self.server.url + '/')
        self.assertEqual('/v1/scheduler/filter', self.server.requests[0].path)

    def test_should_pass_no_host_when_climate_answers_400(self):
        self.server.answer = lambda body: (400, {
            'error_code': 400, 'error_name': 'MalformedParameter',
            'error_message': 'Malformed lease_params: not JSON'})
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = self.run_filter()
        self.assertEqual([], passed)
        self.assertIn('Malformed lease_params: not JSON', logs.output[0])

    def test_should_pass_no_host_when_climate_answers_409(self):
        self.server.answer = lambda body: (409, {
            'error_code': 409, 'error_name': 'NotEnoughHostsAvailable',
            'error_message': 'Not enough hosts available'})
        with self.assertLogs('climatenova.filter', 'WARNING'):
            self.assertEqual([], self.run_filter())

    def test_should_fail_safe_when_climate_answers_500(self):
        self.server.answer = lambda body: (500, {
            'error_code': 500, 'error_message': 'database down'})
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = self.run_filter()
        self.assertEqual(MANAGED_REFUSED, passed)
        self.assertIn('could not be asked', logs.output[0])
        self.assertIn('database down', logs.output[0])

    def test_should_fail_safe_when_climate_refuses_the_credentials(self):
        self.server.answer = lambda body: (401, {
            'error_code': 401, 'error_message': 'token expired'})
        with self.assertLogs('climatenova.filter', 'WARNING'):
            self.assertEqual(MANAGED_REFUSED, self.run_filter())

    def test_should_fail_safe_when_the_answer_is_not_json(self):
        self.server.answer = lambda body: (200, '<html>proxy</html>')
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            self.assertEqual(MANAGED_REFUSED, self.run_filter())
        self.assertIn('not JSON', logs.output[0])

    def test_should_fail_safe_when_the_answer_has_no_hosts(self):
        self.server.answer = lambda body: (200, {'rejected': {}})
        with self.assertLogs('climatenova.filter', 'WARNING'):
            self.assertEqual(MANAGED_REFUSED, self.run_filter())

    def test_should_fail_safe_in_time_when_climate_does_not_answer(self):
        self.server.delay = 3
        started = time.monotonic()
        with self.assertLogs('climatenova.filter', 'WARNING'):
            passed = self.run_filter(timeout=1)
        self.assertLess(time.monotonic() - started, 2.5)
        self.assertEqual(MANAGED_REFUSED, passed)

    def test_should_fail_safe_in_time_when_the_answer_trickles(self):
        # Each byte comes well within the timeout; the whole answer does
        # not. Only a deadline on the whole call stops this.
        self.server.trickle = 0.3
        started = time.monotonic()
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = self.run_filter(timeout=1)
        self.assertLess(time.monotonic() - started, 2.5)
        self.assertEqual(MANAGED_REFUSED, passed)
        self.assertIn('no answer within 1 s', logs.output[0])

    def test_should_fail_safe_when_nothing_listens(self):
        url = 'http://127.0.0.1:%d/v1' % support.closed_port()
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = self.run_filter(url=url)
        self.assertEqual(MANAGED_REFUSED, passed)
        self.assertIn('could not be asked', logs.output[0])


if __name__ == '__main__':
    unittest.main()
