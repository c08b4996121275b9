// ServerSentEvents
