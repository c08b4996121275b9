import CheckedInput
import Testing

@Suite(.timeLimit(.minutes(3))) struct ExponentialDelayTests {
    @Test func doublesPerAttemptUpToTheMaximum() {
        let delays = (0..<8).map { ExponentialDelay.delay(attempt: $0, base: .seconds(1), maximum: .seconds(30)) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30), .seconds(30)])
    }

    @Test func hugeAttemptCountsNeitherOverflowNorPassTheMaximum() {
        #expect(ExponentialDelay.delay(attempt: Int.max, base: .milliseconds(250), maximum: .seconds(16)) == .seconds(16))
        #expect(ExponentialDelay.delay(attempt: -5, base: .seconds(1), maximum: .seconds(16)) == .seconds(1))
    }

    @Test func aBaseAboveTheMaximumIsKeptAndZeroStaysZero() {
        #expect(ExponentialDelay.delay(attempt: 3, base: .seconds(40), maximum: .seconds(30)) == .seconds(40))
        #expect(ExponentialDelay.delay(attempt: 3, base: .zero, maximum: .seconds(30)) == .zero)
    }

    @Test func jitterPlacesTheDelayBetweenHalfAndWhole() {
        #expect(ExponentialDelay.delay(attempt: 2, base: .seconds(1), maximum: .seconds(30), unit: 0) == .seconds(2))
        #expect(ExponentialDelay.delay(attempt: 2, base: .seconds(1), maximum: .seconds(30), unit: 1) == .seconds(4))
        #expect(ExponentialDelay.delay(attempt: 2, base: .seconds(1), maximum: .seconds(30), unit: 7) == .seconds(4))
        #expect(ExponentialDelay.delay(attempt: 2, base: .seconds(1), maximum: .seconds(30), unit: -1) == .seconds(2))
    }
}
