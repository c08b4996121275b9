// OrderSync: order events and silent pushes become sync jobs (the translator), the stream service
// journals them with its cursor, and the single serial executor applies them one at a time, with
// retries, dead letters and full syncs that fetch and apply side by side. It knows the store only
// by its capabilities, and the backend only through the session and CurlHTTP.
