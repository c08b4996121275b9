// ServerSentEvents: the WHATWG `text/event-stream` format, both ways. A pure, incremental parser
// (bytes in; events, comments and retry values out; every split of the input gives the same
// result) and the one writer of event text (`ServerSentEventWriter`) that every stream this project
// serves uses: the orders API's change feed and the Sandbox's feeds. No I/O, no clock; it knows
// nothing about connections beyond "a new response body starts" and "the body ended".
