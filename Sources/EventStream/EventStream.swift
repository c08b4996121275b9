// EventStream
