"""Climate's scheduler filter for Nova.

Load it with ``climatenova.filter.ClimateFilter`` in ``[filter_scheduler]``
and configure the ``[climate]`` group (see contrib/nova/README.md).
"""
