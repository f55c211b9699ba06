// libFuzzer entry point for invite-code parsing (`make fuzz`): what a user types or pastes into
// `account join`. Compiled with Sources/HandoffModel by swiftc -sanitize=fuzzer,address.
// Properties: never crash; an accepted code prints as text that parses to the same code.
@_cdecl("LLVMFuzzerTestOneInput")
public func inviteCodeFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let code = try? InviteCode(parsing: text) else { return 0 }
    guard (try? InviteCode(parsing: code.text)) == code else {
        fatalError("an accepted code does not survive printing")
    }
    return 0
}
