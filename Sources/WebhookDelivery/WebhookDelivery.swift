// WebhookDelivery: outgoing webhooks (DESIGN §13). Every change in the change log goes to every enabled
// endpoint whose filters take it, as the change feed's JSON, signed per Standard Webhooks v1, through
// the one libcurl multi loop. The change log is the outbox: per endpoint, changes go in order, one in
// flight, and the endpoint's cursor moves in the store only after a 2xx, so a crash, a restart or a
// failover resumes exactly there (at least once, never lost). A slow or dead endpoint only delays
// itself: each has its own task, and nothing else waits for one. It must not write orders or the
// change log, nor hold a secret anywhere but in the request it signs.
