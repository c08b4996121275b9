import CheckedInput
import CurlHTTP
import StoreModel

extension Targets {
    /// `webhook-options`: an endpoint's stored delivery options (a document any hand may have edited)
    /// and the address ranges of `webhooks.allow_private` and the listeners' allow lists. The first
    /// line is a range, the rest a stored document. Invariants: a range parsed holds its own network
    /// and reads back from its description; the options read are within their bounds and survive being
    /// stored and read again; the address guard judges any address without trapping.
    static func webhookOptions(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false)
        let line = String(decoding: parts.first ?? [], as: UTF8.self)
        if let range = AddressRange(line) {
            guard range.contains(bytes: range.network) else { violated("\(range) does not hold its own network") }
            guard AddressRange(range.description) == range else { violated("\(range) does not read back from its description") }
            _ = AddressGuard(allowed: [range]).permits(range.network)
        }
        for length in [4, 16] where bytes.count >= length {
            _ = AddressGuard().permits(Array(bytes.prefix(length)))
        }
        let document = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
        let options = WebhookDeliveryOptions.stored(document)
        guard WebhookDeliveryOptions.inFlightRange.contains(options.maxInFlight),
              WebhookDeliveryOptions.batchSizeRange.contains(options.batchSize),
              WebhookDeliveryOptions.batchMillisecondsRange.contains(options.batchMilliseconds),
              WebhookDeliveryOptions.rateRange.contains(options.ratePerSecond) else {
            violated("options out of bounds from \(document): \(options)")
        }
        guard WebhookDeliveryOptions.stored(options.stored) == options else { violated("options did not survive a round trip: \(options)") }
    }
}
