"""Which hosts to refuse when Climate cannot be asked.

Climate marks the hosts it manages through their Nova aggregates, so the
scheduler can tell them apart without Climate: refusing those (and only
those) keeps reserved hosts for their leases while plain servers still boot.
"""

# Aggregates Climate keeps its own hosts in; the freepool's name is Climate's
# FREEPOOL_NAME, set here as [climate] freepool_name.
DEFAULT_FREEPOOL = 'freepool'
RECYCLE = 'recycle'
# Reservation pools get a zone with this prefix (Climate's AZ_PREFIX, set here
# as [climate] az_prefix); ``blazar:`` before Blazar renamed it, kept so old
# pools stay protected.
DEFAULT_ZONE_PREFIX = 'blazar_'
LEGACY_ZONE_PREFIX = 'blazar:'
# Reservation pools and instance-reservation aggregates carry one of these.
MANAGED_METADATA_KEYS = ('blazar:owner', 'reservation')


def attr(obj, name, default=None):
    """obj.name, or default when absent.

    Nova objects raise NotImplementedError (not AttributeError) for a field
    that was never loaded, so getattr's default alone is not enough.
    """
    try:
        value = getattr(obj, name, default)
    except Exception:
        return default
    return default if value is None else value


def is_managed(host_state, freepool=DEFAULT_FREEPOOL,
               zone_prefix=DEFAULT_ZONE_PREFIX):
    """True when any of the host's aggregates belongs to Climate."""
    prefixes = (zone_prefix, LEGACY_ZONE_PREFIX)
    for aggregate in attr(host_state, 'aggregates', ()):
        if attr(aggregate, 'name') in (freepool, RECYCLE):
            return True
        metadata = attr(aggregate, 'metadata', {})
        # Nova's Aggregate reads its zone from metadata; fakes may not.
        zone = (attr(aggregate, 'availability_zone')
                or metadata.get('availability_zone'))
        if zone and str(zone).startswith(prefixes):
            return True
        if any(key in metadata for key in MANAGED_METADATA_KEYS):
            return True
    return False


def unmanaged(host_states, freepool=DEFAULT_FREEPOOL,
              zone_prefix=DEFAULT_ZONE_PREFIX):
    """The hosts Climate does not manage, in their order."""
    return [host for host in host_states
            if not is_managed(host, freepool, zone_prefix)]
