"""ClimateFilter: Climate decides which hosts a server may use.

Enable it in nova.conf as ``climatenova.filter.ClimateFilter``.
"""

import logging
import threading

from climatenova import client as climate_client
from climatenova import fallback
from climatenova.fallback import attr

try:
    from nova.scheduler.filters import BaseHostFilter
except ImportError:
    # nova-scheduler always has Nova. This stand-in, with the parts of
    # Nova's base class the filter uses, only lets the unit tests run on
    # a machine without python3-nova.
    class BaseHostFilter(object):
        run_filter_once_per_request = False
        RUN_ON_REBUILD = False

        def run_filter_for_index(self, index):
            return not (self.run_filter_once_per_request and index > 0)

        def filter_all(self, filter_obj_list, spec_obj):
            for obj in filter_obj_list:
                if self.host_passes(obj, spec_obj):
                    yield obj

        def host_passes(self, host_state, spec_obj):
            raise NotImplementedError()

LOG = logging.getLogger(__name__)

# One log line per request, however many hosts Climate rejects.
MAX_LOGGED_REASONS = 5
MAX_NAMED_HOSTS = 3
MAX_REASON = 200


def flat_hints(hints):
    """Nova stores every hint as a list; one value is sent as itself."""
    flat = {}
    for name, value in (hints or {}).items():
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        flat[name] = value
    return flat


def request_body(host_states, spec_obj):
    """The JSON body of POST /scheduler/filter."""
    flavor = attr(spec_obj, 'flavor')
    return {
        'hosts': [attr(host, 'nodename') for host in host_states],
        'project_id': attr(spec_obj, 'project_id'),
        'user_id': attr(spec_obj, 'user_id'),
        'instance_uuid': attr(spec_obj, 'instance_uuid'),
        # Climate refuses a reserved boot of several servers: it sees one uuid.
        'num_instances': attr(spec_obj, 'num_instances', 1),
        'hints': flat_hints(attr(spec_obj, 'scheduler_hints', {})),
        'flavor_extra_specs': dict(attr(flavor, 'extra_specs', {})),
    }


def is_rebuild(spec_obj):
    """Nova marks a rebuild's scheduling with this hint."""
    hints = attr(spec_obj, 'scheduler_hints', {})
    return hints.get('_nova_check_type') == ['rebuild']


def summarize(rejected):
    """'reason (N: a, b, c, ...); ...', bounded in length."""
    by_reason = {}
    for host, reason in rejected.items():
        by_reason.setdefault(str(reason)[:MAX_REASON], []).append(str(host))
    parts = []
    for reason, hosts in list(by_reason.items())[:MAX_LOGGED_REASONS]:
        named = ', '.join(hosts[:MAX_NAMED_HOSTS])
        if len(hosts) > MAX_NAMED_HOSTS:
            named += ', ...'
        parts.append('%s (%d: %s)' % (reason, len(hosts), named))
    if len(by_reason) > MAX_LOGGED_REASONS:
        parts.append('%d more reasons' % (len(by_reason) - MAX_LOGGED_REASONS))
    return '; '.join(parts)


class ClimateFilter(BaseHostFilter):
    """Passes the hosts Climate names; one HTTP call per request."""

    # Climate judges all candidates at once; the other servers of a
    # multi-create use the hosts this first pass left.
    run_filter_once_per_request = True
    # As for Nova's own filters: a rebuild keeps its host unasked.
    RUN_ON_REBUILD = False

    def __init__(self, client=None, conf=None):
        super(ClimateFilter, self).__init__()
        # Built once and kept, so the session's token is reused;
        # keystoneauth fetches a new one when it expires.
        self._client = client
        self._conf = conf
        self._lock = threading.Lock()

    def _get_client(self):
        with self._lock:
            if self._client is None:
                # Nothing is kept on failure: the next request retries.
                self._client = climate_client.ClimateClient.from_conf(
                    self._conf)
            return self._client

    def host_passes(self, host_state, spec_obj):
        return bool(self.filter_all([host_state], spec_obj))

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        if not hosts or (not self.RUN_ON_REBUILD and is_rebuild(spec_obj)):
            return hosts
        instance = attr(spec_obj, 'instance_uuid')
        # The reasons name every refused host: asked only when logged
        # here at DEBUG, or always with [climate] explain = True.
        explain = LOG.isEnabledFor(logging.DEBUG)
        try:
            passed, rejected = self._get_client().ask(
                request_body(hosts, spec_obj), explain=explain)
        except climate_client.Refused as e:
            # Nova then raises NoValidHost; this line says why.
            LOG.warning('Climate refused instance %s: %s', instance, e)
            return []
        except Exception as e:
            # Fail safe: reserved hosts stay reserved, others still serve.
            if not isinstance(e, climate_client.Unavailable):
                e = '%s: %s' % (type(e).__name__, e)
            freepool, zone_prefix = climate_client.pool_names(self._conf)
            kept = fallback.unmanaged(hosts, freepool, zone_prefix)
            LOG.warning('Climate could not be asked about instance %s (%s); '
                        'refusing the %d host(s) it manages, passing %d',
                        instance, e, len(hosts) - len(kept), len(kept))
            return kept
        named = set(name for name in passed if isinstance(name, str))
        kept = [host for host in hosts if attr(host, 'nodename') in named]
        if len(kept) < len(hosts) and rejected is None:
            LOG.info('Climate passed %d of %d host(s) for instance %s',
                     len(kept), len(hosts), instance)
        elif len(kept) < len(hosts):
            LOG.info('Climate passed %d of %d host(s) for instance %s; '
                     'rejected: %s', len(kept), len(hosts), instance,
                     summarize(rejected) or 'no reason given')
        else:
            LOG.debug('Climate passed all %d host(s) for instance %s',
                      len(hosts), instance)
        return kept
