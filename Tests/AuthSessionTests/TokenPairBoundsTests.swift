import AuthSession
import Testing

/// Issue 11: a login or refresh answer with an out-of-range number stopped `orderlive login`
/// (`Int64(1e19)` trapped). Every number in a token pair is now a clear decoding error instead.
@Suite(.timeLimit(.minutes(3))) struct TokenPairBoundsTests {
    private static let base = #""access_token":"a","refresh_token":"r""#

    private static func decode(_ fields: String) throws(AuthError) -> TokenPair {
        try TokenPair.decode(Array("{\(base),\(fields)}".utf8), receivedAt: 1_000)
    }

    /// The JSON edge values of every numeric field: the ends of Int64, one past UInt64, 1e308,
    /// -0, a fraction, and numbers as strings where a number is due.
    static let numbers = [
        "-9223372036854775808", "9223372036854775807", "18446744073709551616", "1e19", "1e308", "-1e308", "-0",
        "2.5", "9007199254740993",
    ]

    @Test func aUserIDOf1e19IsADecodingErrorNotATrap() {
        #expect(throws: AuthError(.invalidResponse,
                                  "the token response's user_id is not a string or an integer within ±2^53")) {
            try Self.decode(#""user_id":1e19"#)
        }
    }

    @Test(arguments: numbers)
    func idsOutOfRangeAreRefusedNamingTheField(_ number: String) throws {
        for field in ["user_id", "store_ids"] {
            let value = field == "store_ids" ? "[\(number)]" : number
            if number == "-0" {
                // The one integer within ±2^53 in the list.
                let pair = try Self.decode("\"\(field)\":\(value)")
                #expect(field == "user_id" ? pair.userID == "0" : pair.storeIDs == ["0"])
                continue
            }
            #expect {
                try Self.decode("\"\(field)\":\(value)")
            } throws: { error in
                let error = error as? AuthError
                return error?.kind == .invalidResponse && error?.message.contains(field) == true
            }
        }
    }

    @Test(arguments: numbers)
    func expiriesOutOfRangeAreRefusedNamingTheField(_ number: String) throws {
        for field in ["expires_in", "expires_at", "refresh_expires_in", "refresh_expires_at"] {
            do {
                let pair = try Self.decode("\"\(field)\":\(number)")
                // -0 is a valid lifetime and a valid time (1970); 2.5 s likewise.
                #expect(["-0", "2.5"].contains(number), "\(field): \(number) was accepted")
                let expiry = field.hasPrefix("refresh") ? pair.refreshExpiresAt : pair.accessExpiresAt
                #expect(expiry.map { $0.isFinite && $0 < 1e12 } == true)
            } catch {
                #expect(error.kind == .invalidResponse)
                #expect(error.message.contains(field), "\(error.message)")
            }
        }
    }

    @Test func aJWTWithAnAbsurdExpIsADecodingError() {
        // header {"alg":"none"}, payload {"exp":1e300}
        let token = "eyJhbGciOiJub25lIn0.eyJleHAiOjFlMzAwfQ.sig"
        #expect(throws: AuthError.self) {
            try TokenPair.decode(Array(#"{"access_token":"\#(token)","refresh_token":"r"}"#.utf8), receivedAt: 0)
        }
    }

    @Test func integersWithinRangeAndStringsStillDecode() throws {
        let pair = try Self.decode(#""user_id":9007199254740992,"store_ids":[1,"s-2"],"expires_in":900"#)
        #expect(pair.userID == "9007199254740992")
        #expect(pair.storeIDs == ["1", "s-2"])
        #expect(pair.accessExpiresAt == 1_900)
        let strings = try Self.decode(#""user_id":"u-1","expires_at":"2030-01-01T00:00:00Z""#)
        #expect(strings.userID == "u-1")
        #expect(strings.accessExpiresAt == 1_893_456_000)
    }

    @Test func aBooleanIsNotAnID() {
        #expect(throws: AuthError.self) { try Self.decode(#""user_id":true"#) }
    }
}

/// The token-pair fuzzer's finding: an `expires_at` with a hundred fraction digits stopped the
/// process inside ICU (SIGFPE). Read by hand now, it is a time like any other.
@Suite(.timeLimit(.minutes(3))) struct TokenPairFuzzFindingTests {
    @Test func aLongFractionInExpiresAtIsReadNotACrash() throws {
        let fraction = String(repeating: "1", count: 100) + "5"
        let body = #"{"access_token":"a","refresh_token":"r","expires_at":"2030-01-01T00:00:00.\#(fraction)Z"}"#
        let pair = try TokenPair.decode(Array(body.utf8), receivedAt: 0)
        #expect(pair.accessExpiresAt == 1_893_456_000.111111111)
    }
}
