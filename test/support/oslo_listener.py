"""An oslo.messaging notification listener with its defaults (a Ceilometer-like consumer).

Usage: oslo_listener.py <transport_url> <control_exchange>
Listens on target topic `notifications` (queue `notifications.info` on the exchange) and
prints one JSON line per notification: {"event_type": ..., "message_id": ...}.
Prints "ready" once its consumer is declared; runs until killed.
"""
import json
import sys
import threading
import time

from oslo_config import cfg
import oslo_messaging


# The threading executor calls info() from several threads: one whole line per write,
# under a lock (print() writes the text and the newline apart, so two lines could mix).
OUT = threading.Lock()


def emit(line):
    with OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Endpoint:
    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        emit(json.dumps({"event_type": event_type, "message_id": metadata["message_id"],
                         "publisher_id": publisher_id}))
        return oslo_messaging.NotificationResult.HANDLED


def main():
    url, exchange = sys.argv[1], sys.argv[2]
    conf = cfg.ConfigOpts()
    conf([], project="climate-test")
    oslo_messaging.set_transport_defaults(exchange)
    transport = oslo_messaging.get_notification_transport(conf, url=url)
    targets = [oslo_messaging.Target(topic="notifications")]
    listener = oslo_messaging.get_notification_listener(
        transport, targets, [Endpoint()], executor="threading")
    listener.start()
    emit("ready")
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
