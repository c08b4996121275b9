/// What a retried dead letter becomes (`orderlive dead-letters retry`, DESIGN §13).
extension DeadLetterRecord {
    /// The job that does again what this dead letter failed to do, with no attempts made: a job
    /// kind comes back as that job (an upsert whose order no longer reads becomes a fetch of it); an
    /// event or a push that could not be read becomes a fetch of its order, or a full sync when it
    /// named none, which is what the agent journaled beside it when it was kept.
    public func retryJob(source: String = "retry") -> NewJob {
        let everything = NewJob(kind: .fullSync, source: source)
        let fetch = orderID.map { NewJob(kind: .fetch, orderID: $0, version: version, source: source) } ?? everything
        switch JobKind(rawValue: kind) {
        case .upsert:
            guard let order = try? OrderRecord.decode(text: raw, appliedAt: 0), order.id == orderID || orderID == nil else {
                return fetch
            }
            return NewJob(kind: .upsert, orderID: order.id, version: order.version, order: order, source: source)
        case .delete:
            guard let orderID else { return everything }
            return NewJob(kind: .delete, orderID: orderID, version: version, source: source)
        case .fetch:
            return fetch
        case .fullSync:
            return everything
        case nil:
            // `event`, `push`: data that could not be read; fetching again is the repair.
            return orderID.map { NewJob(kind: .fetch, orderID: $0, source: source) } ?? everything
        }
    }
}
