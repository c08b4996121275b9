import StoreModel
import Testing

/// A job's stored trace context (DESIGN §14) is written only from fields that can be read back, and
/// read back bounded: a damaged column costs the job a new trace, never a failure or a trap.
@Suite(.timeLimit(.minutes(1))) struct StoredTraceContextTests {
    @Test func fieldsRoundTripAndWhatCannotBeStoredIsLeftOut() {
        let fields = ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=1,b=2"]
        #expect(StoredTraceContext.fields(StoredTraceContext.text(fields)) == fields)
        #expect(StoredTraceContext.text([:]) == nil, "tracing off: nothing stored")
        let unstorable = ["bad\nname": "x", "a=b": "x", "empty": "", "newline": "x\ny", "long": String(repeating: "z", count: 513)]
        #expect(StoredTraceContext.text(unstorable) == nil)
        // One field alone (a `traceparent`, the case of every push) takes the short way: the same rules.
        let parent = ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"]
        #expect(StoredTraceContext.text(parent) == "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        #expect(StoredTraceContext.fields(StoredTraceContext.text(parent)) == parent)
        for (name, value) in unstorable { #expect(StoredTraceContext.text([name: value]) == nil, "\(name)") }
    }

    @Test func aDamagedColumnReadsAsFewerFieldsNeverATrap() {
        #expect(StoredTraceContext.fields(nil).isEmpty)
        #expect(StoredTraceContext.fields("").isEmpty)
        #expect(StoredTraceContext.fields("=x\nno-equals\n\n\n").isEmpty)
        #expect(StoredTraceContext.fields("a==b") == ["a": "=b"])
        #expect(StoredTraceContext.fields(String(repeating: "k=v\n", count: 10_000)).isEmpty, "over the bound: ignored")
        let many = (0..<20).map { "k\($0)=v" }.joined(separator: "\n")
        #expect(StoredTraceContext.fields(many).count == 8, "at most eight fields")
    }
}
