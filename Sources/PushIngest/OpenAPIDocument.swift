/// The OpenAPI 3.1 document of the push listener: every route ``PushServer`` registers, served at
/// `GET /openapi.json`. `PushServerRouteTests` checks it against ``PushServer/routes`` both ways, and
/// `make fuzz-api` runs schemathesis against a live agent with it: every answer must match.
/// Edit it when a route, a status or a body changes; the tests say what drifted.
public enum OpenAPIDocument {
    /// The document's JSON text.
    public static let json: String = ##"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "orderlive agent",
    "version": "1",
    "summary": "The push endpoint and the operations endpoints of one orderlive agent (DESIGN §4).",
    "description": "Served by `orderlive run` on `ingest.listen` (default 127.0.0.1:8080). `POST /api/push` accepts Gorush's request body and answers as Gorush does; everything is acknowledged only after it is committed to the agent's journal. Errors are `{\"code\": N, \"message\": \"...\"}`. Authentication depends on `ingest.auth`: none (loopback only), a bearer secret, or Standard Webhooks signatures; the operations endpoints need none.",
    "license": { "name": "See the repository" }
  },
  "servers": [ { "url": "http://127.0.0.1:8080", "description": "the default ingest.listen" } ],
  "paths": {
    "/api/push": {
      "post": {
        "operationId": "push",
        "summary": "Accept Gorush notifications; order notifications become sync jobs",
        "description": "All or nothing: the request's jobs and dedupe keys are committed in one transaction before the 200. A request whose `webhook-id` was accepted within `ingest.dedupe_window_s` with the same body is answered as before and makes no new job; with another body it is a 409 and nothing of it is applied. A notification whose `notif_id` was accepted within the window with the same content makes no new job; one with other content under the same `notif_id` is applied (and counted in `orderlive_push_reused_notif_ids_total`). Bounds are checked before the body is read: over `ingest.max_body_bytes` is a 413 and the connection is closed.",
        "security": [ {}, { "bearer": [] }, { "standardWebhooks": [] } ],
        "parameters": [
          { "name": "webhook-id", "in": "header", "required": false, "description": "Standard Webhooks message id; also the request's idempotency key in every auth mode.", "schema": { "type": "string" } },
          { "name": "webhook-timestamp", "in": "header", "required": false, "description": "Standard Webhooks: Unix seconds, within 5 minutes of the agent's clock (`ingest.auth: standard-webhooks`).", "schema": { "type": "string" } },
          { "name": "webhook-signature", "in": "header", "required": false, "description": "Standard Webhooks: space-separated `v1,<base64 HMAC-SHA256 of id.timestamp.body>` signatures.", "schema": { "type": "string" } },
          { "name": "svix-id", "in": "header", "required": false, "description": "Svix's name for `webhook-id` (the same scheme); both names with different values are a 401.", "schema": { "type": "string" } },
          { "name": "svix-timestamp", "in": "header", "required": false, "description": "Svix's name for `webhook-timestamp`.", "schema": { "type": "string" } },
          { "name": "svix-signature", "in": "header", "required": false, "description": "Svix's name for `webhook-signature`.", "schema": { "type": "string" } }
        ],
        "requestBody": {
          "required": true,
          "content": { "application/json": { "schema": { "$ref": "#/components/schemas/PushRequest" } } }
        },
        "responses": {
          "200": {
            "description": "Accepted and journaled (or accepted before, within the dedupe window).",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/PushAccepted" } } }
          },
          "400": {
            "description": "Gorush's messages: `Missing notifications field.`, `Notifications field is empty.`, `Number of notifications(N) over limit(M)`; or a malformed Content-Length.",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "401": {
            "description": "Authentication failed; the message says how (never the secret).",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "408": {
            "description": "The body did not arrive within `ingest.read_timeout_ms`.",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "409": {
            "description": "The `webhook-id` was accepted within `ingest.dedupe_window_s` for a different body; nothing of this request was applied. Send a new request with a new id.",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "413": {
            "description": "The body is over `ingest.max_body_bytes`.",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "429": {
            "description": "The journal is over `ingest.high_water_jobs`; nothing of the request was accepted.",
            "headers": { "Retry-After": { "$ref": "#/components/headers/RetryAfter" } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "503": {
            "description": "Shutting down, or the journal could not be written (disk full, read-only, I/O error); nothing was accepted.",
            "headers": { "Retry-After": { "$ref": "#/components/headers/RetryAfter" } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          }
        }
      }
    },
    "/healthz": {
      "get": {
        "operationId": "health",
        "summary": "200 while the process serves",
        "responses": {
          "200": {
            "description": "The process serves.",
            "content": { "application/json": { "schema": { "type": "object", "required": [ "status" ], "properties": { "status": { "const": "ok" } } } } }
          }
        }
      }
    },
    "/readyz": {
      "get": {
        "operationId": "readiness",
        "summary": "Whether the agent can do its work",
        "description": "200 when the store is open and writable and the executor runs; 503 otherwise, with the reason. The auth and stream states are reported either way (a missing session is a note, not unreadiness: pushes are still journaled).",
        "responses": {
          "200": { "description": "Ready.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Readiness" } } } },
          "503": { "description": "Not ready; `reason` says why.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Readiness" } } } }
        }
      }
    },
    "/api/status": {
      "get": {
        "operationId": "status",
        "summary": "The JSON of `orderlive status --json`",
        "responses": {
          "200": { "description": "The agent's state; never a token.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Status" } } } }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "summary": "Prometheus text exposition (orderlive_* metrics)",
        "responses": {
          "200": { "description": "The metrics.", "content": { "text/plain": { "schema": { "type": "string" } } } }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "openapi",
        "summary": "This document",
        "responses": {
          "200": { "description": "The OpenAPI 3.1 document of this listener.", "content": { "application/json": { "schema": { "type": "object", "required": [ "openapi", "paths" ] } } } }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": { "type": "http", "scheme": "bearer", "description": "`ingest.auth: bearer`: the secret in `ingest.secret_file`." },
      "standardWebhooks": { "type": "apiKey", "in": "header", "name": "webhook-signature", "description": "`ingest.auth: standard-webhooks`: `webhook-id`, `webhook-timestamp` and `webhook-signature` as https://www.standardwebhooks.com specifies, with the `whsec_` secret in `ingest.secret_file`." }
    },
    "headers": {
      "RetryAfter": { "description": "Seconds to wait before sending again.", "schema": { "type": "string", "pattern": "^[0-9]+$" } }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": [ "code", "message" ],
        "properties": { "code": { "type": "integer" }, "message": { "type": "string" } }
      },
      "PushRequest": {
        "type": "object",
        "description": "Gorush's request body. Unknown keys are ignored; a known key of the wrong type makes the request a 400, as in Gorush.",
        "required": [ "notifications" ],
        "properties": {
          "notifications": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "description": "At most `ingest.max_notifications` (default 100).",
            "items": { "$ref": "#/components/schemas/Notification" }
          }
        }
      },
      "Notification": {
        "type": "object",
        "description": "A notification is an order notification when `data.type` starts with `order.` or `data.order_id` is present; `data.order` carries a full order, otherwise the order is fetched; `data.type: orders.resync` asks for a full sync. Other notifications are accepted and counted and make no job.",
        "properties": {
          "tokens": { "type": [ "array", "null" ], "items": { "type": "string" } },
          "platform": { "$ref": "#/components/schemas/OptionalInteger", "description": "1 iOS, 2 Android, 3 Huawei." },
          "badge": { "$ref": "#/components/schemas/OptionalInteger" },
          "message": { "type": [ "string", "null" ] },
          "title": { "type": [ "string", "null" ] },
          "priority": { "type": [ "string", "null" ] },
          "topic": { "type": [ "string", "null" ], "description": "Counted as one more target." },
          "push_type": { "type": [ "string", "null" ] },
          "notif_id": { "type": [ "string", "null" ], "description": "The notification's idempotency key." },
          "apns_id": { "type": [ "string", "null" ] },
          "collapse_id": { "type": [ "string", "null" ] },
          "content_available": { "type": [ "boolean", "null" ] },
          "mutable_content": { "type": [ "boolean", "null" ] },
          "production": { "type": [ "boolean", "null" ] },
          "development": { "type": [ "boolean", "null" ] },
          "data": { "type": [ "object", "null" ], "description": "The app's payload: `type`, `order_id`, `version`, `order`." }
        }
      },
      "OptionalInteger": {
        "type": [ "integer", "null" ],
        "minimum": -9007199254740992,
        "maximum": 9007199254740992
      },
      "PushAccepted": {
        "type": "object",
        "description": "Gorush's success body: `counts` is the tokens, plus one for each notification with a topic.",
        "required": [ "counts", "logs", "success" ],
        "properties": {
          "counts": { "type": "integer", "minimum": 0 },
          "logs": { "type": "array" },
          "success": { "const": "ok" }
        }
      },
      "AuthState": { "enum": [ "hydrating", "unauthenticated", "authenticated", "refreshing", "locked" ] },
      "StreamState": { "enum": [ "connecting", "open", "backoff", "stopped" ] },
      "Identifier": { "type": [ "integer", "string", "null" ], "description": "A number when the backend's id is all digits, else a string." },
      "Readiness": {
        "type": "object",
        "required": [ "ready", "reason", "auth", "stream", "notes" ],
        "properties": {
          "ready": { "type": "boolean" },
          "reason": { "type": [ "string", "null" ], "description": "Why it is not ready: shutting down, the store cannot be read or written (with the cause), the executor is not running." },
          "auth": { "type": "object", "required": [ "state" ], "properties": { "state": { "$ref": "#/components/schemas/AuthState" } } },
          "stream": {
            "type": "object",
            "required": [ "state", "reconnects" ],
            "properties": { "state": { "$ref": "#/components/schemas/StreamState" }, "reconnects": { "type": "integer", "minimum": 0 } }
          },
          "notes": { "type": "array", "items": { "type": "string" } },
          "database": { "$ref": "#/components/schemas/Database" }
        }
      },
      "Database": {
        "type": "object",
        "description": "The store as the agent last saw it: readiness and status are answered from this, never by waiting on the store.",
        "required": [ "answered_s_ago", "error" ],
        "properties": {
          "answered_s_ago": { "type": [ "number", "null" ], "minimum": 0, "description": "Seconds since the store last answered a read; null before its first answer." },
          "error": { "type": [ "string", "null" ], "description": "Why the last read failed, if it did." }
        }
      },
      "Status": {
        "type": "object",
        "required": [ "auth", "owner_user_id" ],
        "properties": {
          "auth": {
            "type": "object",
            "required": [ "state", "user_id", "role", "store_ids", "access_expires_at", "refresh_expires_at" ],
            "properties": {
              "state": { "$ref": "#/components/schemas/AuthState" },
              "user_id": { "$ref": "#/components/schemas/Identifier" },
              "role": { "type": [ "string", "null" ] },
              "store_ids": { "type": "array", "items": { "$ref": "#/components/schemas/Identifier" } },
              "access_expires_at": { "type": [ "string", "null" ], "format": "date-time" },
              "refresh_expires_at": { "type": [ "string", "null" ], "format": "date-time" }
            }
          },
          "stream": {
            "type": "object",
            "required": [ "state", "cursor" ],
            "properties": {
              "state": { "$ref": "#/components/schemas/StreamState" },
              "cursor": { "type": "string", "description": "The stored Last-Event-ID; empty before the first event." },
              "reconnects": { "type": "integer", "minimum": 0 },
              "last_event_at": { "type": [ "string", "null" ], "format": "date-time" }
            }
          },
          "journal": {
            "type": "object",
            "required": [ "depth", "oldest_age_s" ],
            "properties": { "depth": { "type": "integer", "minimum": 0 }, "oldest_age_s": { "type": "integer", "minimum": 0 } }
          },
          "dead_letters": { "type": "integer", "minimum": 0 },
          "orders": { "type": "integer", "minimum": 0 },
          "owner_user_id": { "$ref": "#/components/schemas/Identifier" },
          "store": {
            "type": "object",
            "required": [ "writable", "reason" ],
            "properties": { "writable": { "type": "boolean" }, "reason": { "type": [ "string", "null" ] } }
          },
          "database": { "$ref": "#/components/schemas/Database" }
        }
      }
    }
  }
}
"""##
}
