import Foundation
import SQLiteStore
public import StoreModel

/// `orders list` and `orders show`: the stored orders as aligned lines, fields, or the JSON exactly as
/// the backend sent it.
public enum OrderOutput {
    /// `orders list --json`: the stored objects exactly as the backend sent them, sorted by id.
    public static func listJSON(_ orders: [OrderRecord]) -> String {
        "[" + orders.map(\.body).joined(separator: ",") + "]"
    }

    /// `orders list`: one aligned line per order.
    public static func listLines(_ orders: [OrderRecord]) -> [String] {
        let header = ["ID", "STATUS", "STORE", "COURIER", "VERSION", "UPDATED"]
        let rows = orders.map { order in
            [order.id, order.status, order.storeID ?? "-", order.courierID ?? "-",
             order.version.map(String.init) ?? "-", order.updatedAt ?? "-"]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    /// `orders show`: the order's fields, one per line, from its stored JSON.
    public static func showLines(_ order: OrderRecord) -> [String] {
        guard let data = order.body.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [order.body] }
        return object.keys.sorted().map { key in
            let value = object[key].flatMap { value -> String? in
                if let string = value as? String { return string }
                if value is NSNull { return "null" }
                if let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]) {
                    return String(data: data, encoding: .utf8)
                }
                return nil
            } ?? ""
            return "\(key): \(value)"
        }
    }
}
