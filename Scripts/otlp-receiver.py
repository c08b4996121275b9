#!/usr/bin/env python3
"""A real OTLP receiver for the telemetry tests (DESIGN §14): it decodes what a collector would be
sent with the OpenTelemetry protobuf definitions (PyPI's opentelemetry-proto, and grpcio for OTLP/gRPC,
which `make deps` installs) and prints one JSON object per span, log record or metric data point on
stdout, for the test to wait on.

    python3 Scripts/otlp-receiver.py [PORT]          # OTLP/HTTP; prints {"message":"listening","port":N} first
    python3 Scripts/otlp-receiver.py --grpc [PORT]   # OTLP/gRPC: the collector's three Export services
    ... --tls CERT KEY CLIENT_CA                       # either over TLS, requiring a client certificate

Every object has "message" ("span", "log" or "metric") and string fields: trace_id, span_id, parent_span_id,
links (a span's linked trace ids, comma-separated),
name, kind, status, service, service_version, instance, backend and account (the resource's
service.name, service.version, service.instance.id, orderlive.store.backend and orderlive.account), and each attribute as attr.<key>; a log
record has body and severity; a metric data point has name, type (sum, gauge or histogram), value (a
histogram's sum), count (a histogram's), buckets (a histogram's upper bounds, comma-separated) and its
attributes as attr.<key>. POST /v1/traces, /v1/logs and /v1/metrics answer 200 with an empty response;
gzip bodies are accepted. Over gRPC each Export answers an empty response. Each export request is also
printed as {"message":"request", "path", "protocol" ("http" or "grpc"), "authorization", "x_api_key",
"client" (the client certificate's common name over TLS, else "")}.
`hold N` on stdin makes the next N seconds of requests answer 503 (UNAVAILABLE over gRPC: a collector
that is down), so a test can check that the agent does not wait for it; `refuse N` answers 401
(UNAUTHENTICATED: a collector that does not take the agent's key), which an exporter does not retry.
"""
import gzip
import json
import os
import stat
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

lock = threading.Lock()
down_until = [0.0]
refused_until = [0.0]


def emit(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def value(any_value):
    kind = any_value.WhichOneof("value")
    return "" if kind is None else str(getattr(any_value, kind))


def resource_fields(resource):
    attrs = {a.key: value(a.value) for a in resource.attributes}
    return {"service": attrs.get("service.name", ""), "service_version": attrs.get("service.version", ""),
            "instance": attrs.get("service.instance.id", ""), "backend": attrs.get("orderlive.store.backend", ""),
            "account": attrs.get("orderlive.account", "")}


def items(request, resources, scopes, field):
    """Each (resource fields, item) of an export request: its resources' scopes' spans, records or metrics."""
    for resource in getattr(request, resources):
        base = resource_fields(resource.resource)
        for scope in getattr(resource, scopes):
            for item in getattr(scope, field):
                yield base, item


def emit_with(obj, attributes):
    obj.update({"attr." + a.key: value(a.value) for a in attributes})
    emit(obj)


def traces(request):
    for base, span in items(request, "resource_spans", "scope_spans", "spans"):
        emit_with({"message": "span", "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                   "parent_span_id": span.parent_span_id.hex(), "name": span.name, "kind": str(span.kind),
                   "status": str(span.status.code), "links": ",".join(link.trace_id.hex() for link in span.links),
                   **base}, span.attributes)
    return trace_service_pb2.ExportTraceServiceResponse().SerializeToString()


def logs(request):
    for base, record in items(request, "resource_logs", "scope_logs", "log_records"):
        emit_with({"message": "log", "body": value(record.body), "severity": record.severity_text,
                   "trace_id": record.trace_id.hex(), "span_id": record.span_id.hex(), **base}, record.attributes)
    return logs_service_pb2.ExportLogsServiceResponse().SerializeToString()


def number(point):
    return str(point.as_int) if point.WhichOneof("value") == "as_int" else repr(point.as_double)


def metrics(request):
    for base, metric in items(request, "resource_metrics", "scope_metrics", "metrics"):
        kind = metric.WhichOneof("data")
        for point in getattr(metric, kind).data_points:
            obj = {"message": "metric", "name": metric.name, "type": kind, **base}
            if kind == "histogram":
                obj.update({"value": repr(point.sum), "count": str(point.count),
                            "buckets": ",".join(repr(b) for b in point.explicit_bounds)})
            else:
                obj["value"] = number(point)
            emit_with(obj, point.attributes)
    return metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if time.monotonic() < down_until[0] or time.monotonic() < refused_until[0]:
            emit({"message": "refused", "path": self.path})
            self.send_response(503 if time.monotonic() < down_until[0] else 401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        route = ROUTES.get(self.path)
        if route is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        client = "".join(value for field in (peer or {}).get("subject", ()) for key, value in field if key == "commonName")
        emit({"message": "request", "path": self.path, "protocol": "http", "client": client,
              "authorization": self.headers.get("Authorization", ""), "x_api_key": self.headers.get("X-Api-Key", "")})
        kind, decode = route
        request = kind()
        request.ParseFromString(body)
        answer = decode(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def commands():
    for line in sys.stdin:
        words = line.split()
        if len(words) == 2 and words[0] in ("hold", "refuse"):
            (down_until if words[0] == "hold" else refused_until)[0] = time.monotonic() + float(words[1])
            emit({"message": "holding" if words[0] == "hold" else "refusing", "seconds": words[1]})
    # A test's pipe ends when the test process does, however it ended: exit with it, so an orphan
    # never holds the test runner's stderr open (swift test would wait for it for ever). Started by
    # hand with stdin from a terminal or /dev/null, it serves until it is stopped.
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        os._exit(0)


ROUTES = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, traces),
    "/v1/logs": (logs_service_pb2.ExportLogsServiceRequest, logs),
    "/v1/metrics": (metrics_service_pb2.ExportMetricsServiceRequest, metrics),
}


def serve_grpc(port, tls):
    """The collector's three gRPC services, each decoding with the same functions as OTLP/HTTP."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    def export(path, answer_type):
        def handle(_self, request, context):
            if time.monotonic() < down_until[0]:
                emit({"message": "refused", "path": path})
                context.abort(grpc.StatusCode.UNAVAILABLE, "held")
            if time.monotonic() < refused_until[0]:
                emit({"message": "refused", "path": path})
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "refused")
            metadata = dict(context.invocation_metadata())
            names = context.auth_context().get("x509_common_name", [])
            emit({"message": "request", "path": path, "protocol": "grpc", "client": b"".join(names).decode(),
                  "authorization": metadata.get("authorization", ""), "x_api_key": metadata.get("x-api-key", "")})
            ROUTES[path][1](request)
            return answer_type()
        return handle

    services = [
        (trace_service_pb2_grpc, "TraceService", "/v1/traces", trace_service_pb2.ExportTraceServiceResponse),
        (logs_service_pb2_grpc, "LogsService", "/v1/logs", logs_service_pb2.ExportLogsServiceResponse),
        (metrics_service_pb2_grpc, "MetricsService", "/v1/metrics", metrics_service_pb2.ExportMetricsServiceResponse),
    ]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    for module, name, path, answer in services:
        servicer = type(name, (getattr(module, name + "Servicer"),), {"Export": export(path, answer)})
        getattr(module, "add_%sServicer_to_server" % name)(servicer(), server)
    if tls:
        certificate, key, client_ca = (open(path, "rb").read() for path in tls)
        credentials = grpc.ssl_server_credentials([(key, certificate)], root_certificates=client_ca, require_client_auth=True)
        bound = server.add_secure_port("127.0.0.1:%d" % port, credentials)
    else:
        bound = server.add_insecure_port("127.0.0.1:%d" % port)
    server.start()
    emit({"message": "listening", "port": str(bound)})
    threading.Thread(target=commands, daemon=True).start()
    server.wait_for_termination()


arguments = [a for a in sys.argv[1:] if a != "--grpc"]
tls = None
if "--tls" in arguments:
    at = arguments.index("--tls")
    tls, arguments = arguments[at + 1:at + 4], arguments[:at] + arguments[at + 4:]
port = int(arguments[0]) if arguments else 0
if "--grpc" in sys.argv[1:]:
    serve_grpc(port, tls)
else:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    if tls:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        context.load_verify_locations(tls[2])
        context.verify_mode = ssl.CERT_REQUIRED
        server.socket = context.wrap_socket(server.socket, server_side=True)
    emit({"message": "listening", "port": str(server.server_address[1])})
    threading.Thread(target=commands, daemon=True).start()
    server.serve_forever()
