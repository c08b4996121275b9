import Foundation

/// One libFuzzer entry point for every input parser but the SSE one (`ParserFuzz`): the target is
/// chosen by `ORDERLIVE_FUZZ_TARGET` (see ``FuzzTarget``), so one sanitizer build serves them all.
/// Each target traps when an invariant breaks; a Swift trap on the input (overflow, a bad
/// conversion) is reported by libFuzzer as a crash with the input that caused it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    FuzzTarget.selected.run(bytes)
    return 0
}
