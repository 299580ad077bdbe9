"""The one call to Climate per scheduling request, and the [climate] options.

Authentication, TLS and timeout come from keystoneauth's standard options, so
``[climate]`` is configured like ``[placement]`` or ``[neutron]``.
"""

import threading

try:
    from keystoneauth1 import loading as ks_loading
    from oslo_config import cfg
except ImportError:
    # Nova always has both; this only lets the unit tests without Nova
    # import the module (they skip the tests that need them).
    ks_loading = cfg = None

GROUP = 'climate'
# keystoneauth registers [climate] timeout without a default; this is ours.
DEFAULT_TIMEOUT = 10
# These say our credentials are wrong, not that Climate judged the request.
AUTH_FAILURES = (401, 403)
# Enough of an error text for the log, never a whole page.
MAX_MESSAGE = 500


class Refused(Exception):
    """Climate judged the request and refused it (a 4xx answer)."""


class Unavailable(Exception):
    """Climate could not be asked, or gave no usable answer."""


def _own_opts():
    return [
        cfg.StrOpt('url',
                   help="Climate's /v1 endpoint, e.g. "
                        "http://climate.example.org:1234/v1. Required."),
        cfg.StrOpt('freepool_name', default='freepool',
                   help="Climate's FREEPOOL_NAME: the aggregate of free "
                        'hosts, refused when Climate cannot be asked.'),
        cfg.StrOpt('az_prefix', default='blazar_',
                   help="Climate's AZ_PREFIX: aggregates whose zone starts "
                        'with it hold reserved hosts, refused when Climate '
                        'cannot be asked.'),
        cfg.BoolOpt('explain', default=False,
                    help='Ask Climate why it refuses hosts on every request '
                         'and log the reasons at INFO. Without it they are '
                         'asked only while the filter logs at DEBUG: the '
                         'answer then names every refused host.'),
    ]


def register_opts(conf):
    """Registers the [climate] options; any number of calls is fine."""
    # oslo.config ignores an option registered again with the same
    # definition, so a second import or call does not raise.
    conf.register_opts(_own_opts(), group=GROUP)
    # cafile, insecure, timeout, ... as in every keystoneauth group.
    ks_loading.register_session_conf_options(conf, GROUP)
    # auth_type and auth_section; the plugin's own options (auth_url,
    # username, ...) are registered when it is loaded.
    ks_loading.register_auth_conf_options(conf, GROUP)


def pool_names(conf=None):
    """([climate] freepool_name, az_prefix): Blazar's defaults when unset
    or when the options cannot be read (the fail-safe must still work)."""
    try:
        conf = cfg.CONF if conf is None else conf
        register_opts(conf)
        return conf[GROUP].freepool_name, conf[GROUP].az_prefix
    except Exception:
        return 'freepool', 'blazar_'


def list_opts():
    """The [climate] options, for oslo-config-generator."""
    return [(GROUP, _own_opts()
             + ks_loading.get_session_conf_options()
             + ks_loading.get_auth_common_conf_options())]


def _short(text):
    text = str(text)
    if len(text) > MAX_MESSAGE:
        return text[:MAX_MESSAGE] + '...'
    return text


def _error_message(response):
    """Climate's error_message, or the start of whatever the body is."""
    try:
        body = response.json()
    except ValueError:
        return _short(response.text or '(empty body)')
    if isinstance(body, dict) and body.get('error_message'):
        return _short(body['error_message'])
    return _short(body)


class ClimateClient(object):
    """POSTs to {url}/scheduler/filter through a keystoneauth session."""

    def __init__(self, url, session, timeout=DEFAULT_TIMEOUT, explain=False):
        self.url = url.rstrip('/') + '/scheduler/filter'
        self.session = session
        self.timeout = timeout
        self.explain = explain

    @classmethod
    def from_conf(cls, conf=None):
        """A client from [climate]; raises Unavailable when misconfigured."""
        if ks_loading is None:
            raise Unavailable('keystoneauth1 or oslo.config is not installed')
        conf = cfg.CONF if conf is None else conf
        register_opts(conf)
        group = conf[GROUP]
        if not group.url:
            raise Unavailable('[%s] url is not set' % GROUP)
        try:
            # None when the group has no auth_type: then no token is sent.
            auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
            session = ks_loading.load_session_from_conf_options(
                conf, GROUP, auth=auth)
        except Exception as e:
            raise Unavailable('[%s] cannot be loaded: %s' % (GROUP, e))
        return cls(group.url, session, group.timeout or DEFAULT_TIMEOUT,
                   explain=group.explain)

    def ask(self, body, explain=False):
        """Climate's 200 answer as (hosts, rejected).

        With ``explain`` (or the client's own), Climate also says why it
        refuses each other host; ``rejected`` is None when the answer has no
        reasons. Raises Refused for a 4xx answer, Unavailable for anything
        else.
        """
        outcome = {}
        url = self.url + ('?explain=true' if explain or self.explain else '')

        def call():
            try:
                outcome['response'] = self.session.post(
                    url, json=body,
                    headers={'Accept': 'application/json'},
                    raise_exc=False, timeout=self.timeout)
            except Exception as e:
                outcome['error'] = e

        # requests' timeout bounds each socket read, not the call: a slow
        # Keystone or a trickling answer could otherwise hold the
        # scheduler much longer. A late worker just finishes on its own.
        worker = threading.Thread(target=call, name='climate-filter')
        worker.daemon = True
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise Unavailable('no answer within %s s' % self.timeout)
        if 'error' in outcome:
            error = outcome['error']
            raise Unavailable(_short('%s: %s' % (type(error).__name__, error)))
        return self._read(outcome['response'])

    def _read(self, response):
        status = response.status_code
        if status in AUTH_FAILURES or status >= 500:
            raise Unavailable(
                'HTTP %d: %s' % (status, _error_message(response)))
        if status >= 400:
            raise Refused('HTTP %d: %s' % (status, _error_message(response)))
        if status != 200:
            raise Unavailable('unexpected HTTP %d' % status)
        try:
            answer = response.json()
        except ValueError:
            raise Unavailable('the answer is not JSON')
        hosts = answer.get('hosts') if isinstance(answer, dict) else None
        if not isinstance(hosts, list):
            raise Unavailable('the answer has no hosts list')
        rejected = answer.get('rejected')
        return hosts, rejected if isinstance(rejected, dict) else None
