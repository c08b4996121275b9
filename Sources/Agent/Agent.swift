// Agent: orderlive's composition root. It turns configuration into running components (the stream,
// the executor, both listeners, the store on either engine, the session), wires them together and
// runs them under one service group; it also holds what the commands share (status, output,
// `inspect`). It holds no protocol logic of its own and never parses arguments: the `orderlive`
// executable does that and calls in here.
