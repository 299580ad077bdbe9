"""Test helpers: a real HTTP server playing Climate, and host/spec fakes."""

import http.server
import json
import socket
import threading
import time
import types

try:
    from nova import objects as nova_objects
    nova_objects.register_all()
    HAVE_NOVA = True
except ImportError:
    nova_objects = None
    HAVE_NOVA = False

try:
    from keystoneauth1 import session as ks_session
    from oslo_config import cfg  # noqa: F401 (the config tests need it)
    HAVE_KEYSTONEAUTH = True
except ImportError:
    ks_session = None
    HAVE_KEYSTONEAUTH = False

INSTANCE = '8e9a4a8a-3e54-4c1a-9a41-6f5a6b8c0a11'


def aggregate(name, zone=None, **metadata):
    """A host aggregate: Nova's own object when Nova is installed."""
    if zone is not None:
        metadata['availability_zone'] = zone
    if HAVE_NOVA:
        return nova_objects.Aggregate(name=name, metadata=metadata)
    return types.SimpleNamespace(name=name, metadata=metadata,
                                 availability_zone=zone)


def host(nodename, *aggregates):
    """A HostState stand-in: the filter reads host, nodename, aggregates."""
    return types.SimpleNamespace(host='compute-' + nodename,
                                 nodename=nodename,
                                 aggregates=list(aggregates))


def spec(hints=None, extra_specs=None, project_id='p1', user_id='u1',
         instance_uuid=INSTANCE):
    """A RequestSpec: Nova's own object (hints are lists) when installed."""
    hints = hints or {}
    extra_specs = extra_specs or {}
    if HAVE_NOVA:
        return nova_objects.RequestSpec(
            project_id=project_id, user_id=user_id,
            instance_uuid=instance_uuid, scheduler_hints=hints,
            flavor=nova_objects.Flavor(extra_specs=extra_specs))
    return types.SimpleNamespace(
        project_id=project_id, user_id=user_id, instance_uuid=instance_uuid,
        scheduler_hints=hints,
        flavor=types.SimpleNamespace(extra_specs=extra_specs))


def closed_port():
    """A local port nothing listens on: connecting is refused."""
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class Request(object):
    def __init__(self, method, path, headers, body):
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class ClimateServer(object):
    """A real HTTP server on 127.0.0.1 answering like Climate's /v1.

    Set ``answer`` to a function of the JSON body returning (status,
    payload); a dict or list payload is sent as JSON, a str as it is.
    ``delay`` waits before answering; ``trickle`` sends the body one byte
    at a time with that pause between bytes.
    """

    def __init__(self):
        self.requests = []
        self.answer = self.pass_all
        self.delay = 0
        self.trickle = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length)
                body = json.loads(raw) if raw else None
                server.requests.append(
                    Request('POST', self.path, dict(self.headers), body))
                status, payload = server.answer(body)
                if not isinstance(payload, str):
                    payload = json.dumps(payload)
                data = payload.encode()
                time.sleep(server.delay)
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if not server.trickle:
                    self.wfile.write(data)
                    return
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(server.trickle)

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                # A client that gave up leaves a broken pipe: expected.
                pass

        self.httpd = Server(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d/v1' % self.httpd.server_address[1]
        # A short poll keeps stop() (which waits for one poll) quick.
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       args=(0.05,))
        self.thread.daemon = True

    @staticmethod
    def pass_all(body):
        return 200, {'hosts': body['hosts']}

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
