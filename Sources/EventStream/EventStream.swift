// EventStream: a reconnecting Server-Sent Events client (DESIGN §8 "Stream") over CurlHTTP and the
// ServerSentEvents parser. It owns reconnect timing, Last-Event-ID, the idle timeout and the status
// policy; it knows nothing about orders, tokens or storage (headers come from a provider).
