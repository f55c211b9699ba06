// libFuzzer entry point for the activity decoder (`make fuzz`), compiled together with
// Sources/HandoffModel by swiftc -sanitize=fuzzer,address. The properties are those of
// Tests/HandoffModelTests/DecoderFuzzTests.swift: never crash; what is accepted re-encodes to an
// encoding that decodes to the same activity, and can be shown as JSON.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func activityDecoderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let activity = try? ActivityEncoding.decode(bytes) else { return 0 }
    let again = ActivityEncoding.encode(activity)
    guard let reread = try? ActivityEncoding.decode(again, maximumSize: .max), reread == activity else {
        fatalError("an accepted encoding does not survive re-encoding")
    }
    guard (try? JSONEncoder().encode(activity)) != nil else {
        fatalError("an accepted activity cannot be shown as JSON")
    }
    return 0
}
