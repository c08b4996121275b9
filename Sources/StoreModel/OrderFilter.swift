/// Which orders a consumer watches: `status`, `store_id`, `courier_id`, each a set of accepted values
/// (empty accepts all); AND across fields, OR within one (DESIGN §11).
public struct OrderFilter: Sendable, Hashable {
    /// Accepted statuses.
    public var statuses: Set<String>
    /// Accepted stores.
    public var storeIDs: Set<String>
    /// Accepted couriers.
    public var courierIDs: Set<String>

    /// Creates a filter; the default accepts every order.
    public init(statuses: Set<String> = [], storeIDs: Set<String> = [], courierIDs: Set<String> = []) {
        self.statuses = statuses
        self.storeIDs = storeIDs
        self.courierIDs = courierIDs
    }

    /// True when it accepts every order.
    public var acceptsAll: Bool { statuses.isEmpty && storeIDs.isEmpty && courierIDs.isEmpty }

    /// Whether an order with `fields` is in the view.
    public func matches(_ fields: OrderChange.Fields) -> Bool {
        (statuses.isEmpty || statuses.contains(fields.status))
            && (storeIDs.isEmpty || fields.storeID.map(storeIDs.contains) == true)
            && (courierIDs.isEmpty || fields.courierID.map(courierIDs.contains) == true)
    }

    /// Whether `order` is in the view.
    public func matches(_ order: OrderRecord) -> Bool {
        matches(OrderChange.Fields(status: order.status, storeID: order.storeID, courierID: order.courierID))
    }
}
