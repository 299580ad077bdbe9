"""[climate] in nova.conf: loaded with keystoneauth's standard options."""

import importlib.util
import os
import shutil
import tempfile
import unittest
from unittest import mock

from climatenova import client as climate_client
from climatenova import filter as climate_filter
from climatenova.tests import support
from climatenova.tests.support import host, spec

if support.HAVE_KEYSTONEAUTH:
    from keystoneauth1 import loading as ks_loading
    from keystoneauth1.identity import generic
    from oslo_config import cfg


@unittest.skipUnless(support.HAVE_KEYSTONEAUTH,
                     'needs keystoneauth1 and oslo.config')
class ConfigTest(unittest.TestCase):

    def load(self, text):
        """A ConfigOpts parsed from a nova.conf holding ``text``."""
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, 'nova.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        conf(['--config-file', path], project='nova',
             default_config_files=[])
        return conf

    def serve(self):
        server = support.ClimateServer().start()
        self.addCleanup(server.stop)
        return server

    def test_should_load_the_password_plugin_when_configured(self):
        conf = self.load('[climate]\n'
                         'url = http://climate.invalid:1234/v1\n'
                         'auth_type = password\n'
                         'auth_url = http://keystone.invalid:5000/v3\n'
                         'username = climate\n'
                         'password = secret\n'
                         'project_name = service\n'
                         'user_domain_name = Default\n'
                         'project_domain_name = Default\n')
        client = climate_client.ClimateClient.from_conf(conf)
        auth = client.session.auth
        self.assertIsInstance(auth, generic.Password)
        self.assertEqual('http://keystone.invalid:5000/v3', auth.auth_url)
        # keystoneauth keeps these private; reading them shows the
        # values reached the plugin (no Keystone is contacted here).
        self.assertEqual('climate', auth._username)
        self.assertEqual('secret', auth._password)
        self.assertEqual('service', auth._project_name)
        self.assertEqual('Default', auth._user_domain_name)
        self.assertEqual('Default', auth._project_domain_name)
        self.assertEqual('http://climate.invalid:1234/v1/scheduler/filter',
                         client.url)
        self.assertEqual(climate_client.DEFAULT_TIMEOUT, client.timeout)

    def test_should_explain_only_when_configured(self):
        plain = self.load('[climate]\nurl = http://c.invalid/v1\n')
        self.assertFalse(climate_client.ClimateClient.from_conf(plain).explain)
        asked = self.load('[climate]\nurl = http://c.invalid/v1\n'
                          'explain = true\n')
        self.assertTrue(climate_client.ClimateClient.from_conf(asked).explain)

    def test_should_use_the_configured_timeout_when_set(self):
        conf = self.load('[climate]\nurl = http://c.invalid/v1\ntimeout = 3\n')
        self.assertEqual(3, climate_client.ClimateClient.from_conf(conf)
                         .timeout)

    def test_should_send_the_configured_token_and_build_the_session_once(
            self):
        server = self.serve()
        # admin_token reads our url as its deprecated endpoint name
        # unless endpoint is set (harmless, but it logs a warning).
        conf = self.load('[climate]\nurl = %s\ntimeout = 1\n'
                         'auth_type = admin_token\nendpoint = %s\n'
                         'token = tok-from-conf\n'
                         % (server.url, server.url))
        flt = climate_filter.ClimateFilter(conf=conf)
        with mock.patch.object(
                ks_loading, 'load_auth_from_conf_options',
                wraps=ks_loading.load_auth_from_conf_options) as load:
            for _ in range(2):
                self.assertEqual(['a'], [h.nodename for h in
                                         flt.filter_all([host('a')], spec())])
        self.assertEqual(1, load.call_count)
        self.assertEqual(['tok-from-conf', 'tok-from-conf'],
                         [r.headers.get('X-Auth-Token')
                          for r in server.requests])

    def test_should_send_no_token_when_there_is_no_auth_type(self):
        server = self.serve()
        conf = self.load('[climate]\nurl = %s\n' % server.url)
        flt = climate_filter.ClimateFilter(conf=conf)
        flt.filter_all([host('a')], spec())
        self.assertEqual(1, len(server.requests))
        self.assertNotIn('X-Auth-Token', server.requests[0].headers)

    def test_should_fail_safe_when_the_url_is_missing(self):
        flt = climate_filter.ClimateFilter(conf=self.load('[climate]\n'))
        hosts = [host('a'), host('b', support.aggregate('freepool'))]
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = flt.filter_all(hosts, spec())
        self.assertEqual(['a'], [h.nodename for h in passed])
        self.assertIn('[climate] url is not set', logs.output[0])

    def test_should_fail_safe_when_the_auth_options_are_incomplete(self):
        conf = self.load('[climate]\nurl = http://c.invalid/v1\n'
                         'auth_type = password\nusername = climate\n')
        flt = climate_filter.ClimateFilter(conf=conf)
        with self.assertLogs('climatenova.filter', 'WARNING') as logs:
            passed = flt.filter_all([host('a')], spec())
        self.assertEqual(['a'], [h.nodename for h in passed])
        self.assertIn('cannot be loaded', logs.output[0])

    def test_should_register_again_when_the_module_is_imported_twice(self):
        conf = cfg.ConfigOpts()
        climate_client.register_opts(conf)
        climate_client.register_opts(conf)
        # A second copy of the module: its options are new objects.
        copy_spec = importlib.util.spec_from_file_location(
            'climatenova_copy', climate_client.__file__)
        copy = importlib.util.module_from_spec(copy_spec)
        copy_spec.loader.exec_module(copy)
        copy.register_opts(conf)
        conf([], default_config_files=[])
        self.assertIsNone(conf.climate.url)
        self.assertIsNone(conf.climate.auth_type)

    def test_should_fail_safe_with_the_configured_pool_names(self):
        conf = self.load('[climate]\nfreepool_name = free-hosts\n'
                         'az_prefix = site_\n')
        self.assertEqual(('free-hosts', 'site_'),
                         climate_client.pool_names(conf))
        self.assertEqual(('freepool', 'blazar_'),
                         climate_client.pool_names(self.load('[climate]\n')))
        flt = climate_filter.ClimateFilter(conf=conf)

        def down():
            raise climate_client.Unavailable('HTTP 503: down')
        flt._get_client = down
        hosts = [host('a', support.aggregate('free-hosts')),
                 host('b', support.aggregate('r-1', zone='site_r-1')),
                 host('c', support.aggregate('freepool')),
                 host('d')]
        with self.assertLogs('climatenova.filter', 'WARNING'):
            passed = flt.filter_all(hosts, spec())
        self.assertEqual(['c', 'd'], [h.nodename for h in passed])

    def test_should_list_the_options_when_generating_a_sample(self):
        [(group, opts)] = climate_client.list_opts()
        self.assertEqual('climate', group)
        self.assertTrue({'url', 'explain', 'timeout', 'auth_type', 'cafile'}
                        <= set(opt.name for opt in opts))


if __name__ == '__main__':
    unittest.main()
