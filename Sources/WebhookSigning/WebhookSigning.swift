// WebhookSigning: Standard Webhooks v1, both ways — the push endpoint verifies a sender's signature
// (DESIGN §4), and outgoing webhooks sign each delivery (DESIGN §13). One implementation of the
// secret's reading, the HMAC-SHA256 over `id.timestamp.body` and the constant-time comparison, so
// the two sides cannot drift apart. It holds a key only as long as a `StandardWebhooks` value lives.
