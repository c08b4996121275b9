// OrdersAPI: the local orders API of DESIGN §11 on a listener of its own: the orders as read from the
// store, the resumable change feed (one fan-out hub, a bounded queue per subscriber, each live
// connection written from its own event loop), the dispatch board and the API's OpenAPI document.
// It never writes the store, never lets one subscriber slow another, and borrows nothing from the
// push endpoint: what both listeners share is LocalHTTP's.
