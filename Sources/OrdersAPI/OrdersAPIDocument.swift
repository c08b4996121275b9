/// The OpenAPI 3.1 document of the orders API listener (`api.listen`): every route
/// ``OrdersAPIServer`` registers, served at its `GET /openapi.json`. `OrdersAPIDocumentTests` checks
/// it against ``OrdersAPIServer/routes`` both ways and calls each operation on a live listener.
public enum OrdersAPIDocument {
    /// The document's JSON text.
    public static let json: String = ##"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "orderlive orders API",
    "version": "1",
    "summary": "The live orders of one orderlive agent, for local consumers (DESIGN §11).",
    "description": "Served by `orderlive run` on `api.listen` (default 127.0.0.1:8090). Orders are exactly the objects the order backend sent. Filters `status`, `store_id` and `courier_id` may each be repeated: AND across fields, OR within one. With `api.auth: bearer`, send `Authorization: Bearer <token>`, `?access_token=<token>` (unless `api.query_tokens` is false), or a session cookie from `POST /v1/session` (a browser: no token in any URL). Each token is a consumer of `api.tokens_file` with its stores: every route shows only those. Errors are `{\"code\": N, \"message\": \"...\"}`.",
    "license": { "name": "See the repository" }
  },
  "servers": [ { "url": "http://127.0.0.1:8090", "description": "the default api.listen" } ],
  "security": [ {}, { "bearer": [] }, { "accessToken": [] }, { "session": [] } ],
  "paths": {
    "/": {
      "get": {
        "operationId": "dispatchBoard",
        "summary": "The dispatch board: one self-contained page over the change feed",
        "description": "With `api.auth: bearer` the page asks for a token once and starts a session (`POST /v1/session`); a `/?access_token=<token>` link is traded for a session at once and taken out of the address bar. `?store_id=` preselects a store.",
        "security": [ {} ],
        "responses": {
          "200": { "description": "The page.", "content": { "text/html": { "schema": { "type": "string" } } } }
        }
      }
    },
    "/healthz": {
      "get": {
        "operationId": "health",
        "summary": "Liveness of the listener",
        "security": [ {} ],
        "responses": {
          "200": { "description": "Listening.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Health" } } } }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "openAPIDocument",
        "summary": "This document",
        "security": [ {} ],
        "responses": {
          "200": { "description": "The OpenAPI 3.1 document.", "content": { "application/json": { "schema": { "type": "object" } } } }
        }
      }
    },
    "/v1/orders": {
      "get": {
        "operationId": "listOrders",
        "summary": "The orders matching the filters, sorted by id, as of one change",
        "parameters": [
          { "$ref": "#/components/parameters/Status" },
          { "$ref": "#/components/parameters/StoreID" },
          { "$ref": "#/components/parameters/CourierID" },
          { "$ref": "#/components/parameters/AccessToken" }
        ],
        "responses": {
          "200": { "description": "The orders, read in one transaction with the seq of the last change they include.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/OrderList" } } } },
          "400": { "$ref": "#/components/responses/BadRequest" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "503": { "$ref": "#/components/responses/Unavailable" }
        }
      }
    },
    "/v1/orders/stream": {
      "get": {
        "operationId": "streamOrders",
        "summary": "The change feed: a snapshot, then every change live, resumable",
        "description": "Server-Sent Events. `retry: 1000` first. A new subscriber gets `event: snapshot` (`{\"order\":{…}}`) per matching order, then `event: ready` with `id: N` and `{\"seq\":N}`. Then every change after N in order, each with `id: <seq>`: `order.upserted` `{\"seq\",\"order\"}`, `order.removed` `{\"seq\",\"order_id\"}` (it left the filter), `order.deleted` `{\"seq\",\"order_id\",\"version\"}`. With `Last-Event-ID: N` or `?since=N` still in the kept history, only the changes after N; an id older than the history, newer than the last change, unreadable, or from another store gets `event: reset` and a fresh snapshot and `ready`. A comment line every `api.heartbeat_s` on an idle stream. A subscriber `api.subscriber_buffer` changes behind gets `event: overflow` and the stream ends; it resumes with its last id.",
        "parameters": [
          { "$ref": "#/components/parameters/Status" },
          { "$ref": "#/components/parameters/StoreID" },
          { "$ref": "#/components/parameters/CourierID" },
          { "$ref": "#/components/parameters/AccessToken" },
          { "name": "since", "in": "query", "required": false, "description": "Resume after this change id (as Last-Event-ID, which takes precedence).", "schema": { "type": "string" } },
          { "name": "Last-Event-ID", "in": "header", "required": false, "description": "Resume after this change id.", "schema": { "type": "string" } }
        ],
        "responses": {
          "200": { "description": "The event stream. The schema is one event's (OpenAPI 3.2 calls it itemSchema; 3.1 readers take it per event): its `event` name, its `id` (sticky, as SSE ids are) and its `data`, JSON whose shape the event's name decides.", "content": { "text/event-stream": { "schema": { "$ref": "#/components/schemas/FeedEvent" } } } },
          "400": { "$ref": "#/components/responses/BadRequest" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "503": {
            "description": "`api.max_subscribers` are connected, or the agent is stopping.",
            "headers": { "Retry-After": { "description": "Seconds to wait.", "schema": { "type": "integer" } } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          }
        }
      }
    },
    "/v1/session": {
      "get": {
        "operationId": "whoAmI",
        "summary": "Who the request is: the consumer's name, stores and access, and how it authenticated",
        "parameters": [ { "$ref": "#/components/parameters/AccessToken" } ],
        "responses": {
          "200": { "description": "The consumer (`anyone`, via `none`, with `api.auth: none`).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Consumer" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" }
        }
      },
      "post": {
        "operationId": "startSession",
        "summary": "Trades a token for a session cookie, so a browser needs no token in any URL",
        "description": "Takes the token only in `Authorization: Bearer`. The cookie `orderlive_session` is HttpOnly, SameSite=Strict, Path=/ (Secure on TLS), a random id bound to the consumer's stores; it ends at `api.session_ttl_s`, at `DELETE /v1/session`, or when its token leaves `api.tokens_file` (SIGHUP). Past `api.max_sessions` the oldest session ends. With `api.auth: none` it needs no token.",
        "security": [ {}, { "bearer": [] } ],
        "responses": {
          "204": { "description": "Started (with `api.auth: none`, nothing is needed and no cookie is set).", "headers": { "Set-Cookie": { "description": "`orderlive_session=…; Max-Age=…; Path=/; HttpOnly; SameSite=Strict`.", "schema": { "type": "string" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" }
        }
      },
      "delete": {
        "operationId": "endSession",
        "summary": "Ends the cookie's session and the feeds it opened, and clears the cookie",
        "security": [ {} ],
        "responses": {
          "204": { "description": "Ended, or there was none.", "headers": { "Set-Cookie": { "description": "The cookie, expired.", "schema": { "type": "string" } } } }
        }
      }
    },
    "/v1/orders/{id}": {
      "get": {
        "operationId": "getOrder",
        "summary": "One order, exactly as the backend sent it",
        "parameters": [
          { "name": "id", "in": "path", "required": true, "schema": { "type": "string" } },
          { "$ref": "#/components/parameters/AccessToken" }
        ],
        "responses": {
          "200": { "description": "The order.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Order" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "404": { "description": "No such order in the store, or one outside the consumer's stores (the same answer: nothing says it exists).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
          "503": { "$ref": "#/components/responses/Unavailable" }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": { "type": "http", "scheme": "bearer", "bearerFormat": "opaque token or JWT", "description": "A consumer's token: a line of `api.tokens_file`, which names the consumer and the stores whose orders it may read; or a JWT (`api.jwt.*`) whose `sub`, `stores` and `scope` say the same." },
      "accessToken": { "type": "apiKey", "in": "query", "name": "access_token", "description": "The same token, for clients that cannot set headers; refused when `api.query_tokens` is false." },
      "session": { "type": "apiKey", "in": "cookie", "name": "orderlive_session", "description": "A session started with `POST /v1/session`: the consumer and stores of the token it was started with." }
    },
    "parameters": {
      "Status": { "name": "status", "in": "query", "required": false, "style": "form", "explode": true, "schema": { "type": "array", "items": { "type": "string", "minLength": 1 } } },
      "StoreID": { "name": "store_id", "in": "query", "required": false, "style": "form", "explode": true, "schema": { "type": "array", "items": { "type": "string", "minLength": 1 } } },
      "CourierID": { "name": "courier_id", "in": "query", "required": false, "style": "form", "explode": true, "schema": { "type": "array", "items": { "type": "string", "minLength": 1 } } },
      "AccessToken": { "name": "access_token", "in": "query", "required": false, "schema": { "type": "string" } }
    },
    "responses": {
      "BadRequest": { "description": "An unknown query parameter or an empty filter value; the message names it.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "Unauthorized": { "description": "A missing or wrong token, a token in the URL with `api.query_tokens: false`, or a session that ended (`api.auth: bearer`).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "Forbidden": { "description": "A `store_id` outside the consumer's stores (`stores=` of its line in `api.tokens_file`); the message names the stores it may read.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "Unavailable": {
        "description": "The order store cannot be read now.",
        "headers": { "Retry-After": { "description": "Seconds to wait.", "schema": { "type": "integer" } } },
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
      }
    },
    "schemas": {
      "FeedEvent": {
        "description": "One change-feed event as an SSE client parses it.",
        "oneOf": [
          { "$ref": "#/components/schemas/FeedSnapshotEvent" },
          { "$ref": "#/components/schemas/FeedReadyEvent" },
          { "$ref": "#/components/schemas/FeedResetEvent" },
          { "$ref": "#/components/schemas/FeedOverflowEvent" },
          { "$ref": "#/components/schemas/FeedUpsertedEvent" },
          { "$ref": "#/components/schemas/FeedRemovedEvent" },
          { "$ref": "#/components/schemas/FeedDeletedEvent" }
        ]
      },
      "FeedSnapshotEvent": {
        "type": "object", "required": ["event", "data"],
        "properties": {
          "event": { "const": "snapshot" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["order"], "properties": { "order": { "$ref": "#/components/schemas/Order" } } } }
        }
      },
      "FeedReadyEvent": {
        "type": "object", "required": ["event", "id", "data"],
        "properties": {
          "event": { "const": "ready" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["seq"], "properties": { "seq": { "type": "integer" } } } }
        }
      },
      "FeedResetEvent": {
        "type": "object", "required": ["event", "data"],
        "properties": {
          "event": { "const": "reset" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["reason"], "properties": { "reason": { "type": "string" } } } }
        }
      },
      "FeedOverflowEvent": {
        "type": "object", "required": ["event", "data"],
        "properties": {
          "event": { "const": "overflow" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["message"], "properties": { "message": { "type": "string" } } } }
        }
      },
      "FeedUpsertedEvent": {
        "type": "object", "required": ["event", "id", "data"],
        "properties": {
          "event": { "const": "order.upserted" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["seq", "order"], "properties": { "seq": { "type": "integer" }, "order": { "$ref": "#/components/schemas/Order" } } } }
        }
      },
      "FeedRemovedEvent": {
        "type": "object", "required": ["event", "id", "data"],
        "properties": {
          "event": { "const": "order.removed" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["seq", "order_id"], "properties": { "seq": { "type": "integer" }, "order_id": { "type": "string" } } } }
        }
      },
      "FeedDeletedEvent": {
        "type": "object", "required": ["event", "id", "data"],
        "properties": {
          "event": { "const": "order.deleted" }, "id": { "$ref": "#/components/schemas/FeedEventID" },
          "data": { "type": "string", "contentMediaType": "application/json", "contentSchema": { "type": "object", "required": ["seq", "order_id", "version"], "properties": { "seq": { "type": "integer" }, "order_id": { "type": "string" }, "version": { "type": ["integer", "null"] } } } }
        }
      },
      "FeedEventID": { "type": "string", "pattern": "^[0-9]+$", "description": "The change id to resume after (Last-Event-ID or ?since=)." },
      "Error": {
        "type": "object", "required": ["code", "message"],
        "properties": { "code": { "type": "integer" }, "message": { "type": "string" } }
      },
      "Health": { "type": "object", "required": ["status"], "properties": { "status": { "const": "ok" } } },
      "Consumer": {
        "type": "object", "required": ["consumer", "stores", "access", "via", "expires_at"],
        "properties": {
          "consumer": { "type": "string", "description": "Its name in `api.tokens_file`." },
          "stores": { "oneOf": [ { "type": "array", "items": { "type": "string" } }, { "const": "*" } ], "description": "The stores whose orders it sees; `*` for every store." },
          "access": { "enum": ["read", "operate"] },
          "via": { "enum": ["token", "session", "none"] },
          "expires_at": { "type": ["integer", "null"], "description": "When the session ends, Unix seconds; null for a token." }
        }
      },
      "Order": {
        "type": "object", "required": ["id", "status"],
        "description": "The order as the backend sent it; every field is kept.",
        "properties": {
          "id": { "type": ["integer", "string"] },
          "status": { "type": "string" },
          "store_id": { "type": ["integer", "string", "null"] },
          "courier_id": { "type": ["integer", "string", "null"] },
          "version": { "type": ["integer", "null"] },
          "updated_at": { "type": ["string", "null"] }
        },
        "additionalProperties": true
      },
      "OrderList": {
        "type": "object", "required": ["seq", "orders"],
        "properties": {
          "seq": { "type": "integer", "description": "The last change the list includes; resume the feed after it." },
          "orders": { "type": "array", "items": { "$ref": "#/components/schemas/Order" } }
        }
      }
    }
  }
}
"""##
}
