// libFuzzer entry point for the advert decoder (`make fuzz`): the plaintext inside a sealed
// advert — what a member (or a stolen key) could make another member decode. Compiled with
// Sources/HandoffModel by swiftc -sanitize=fuzzer,address. Properties: never crash; what is
// accepted re-encodes to bytes that decode to the same advert.
@_cdecl("LLVMFuzzerTestOneInput")
public func advertDecoderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let advert = Advert(decoding: bytes) else { return 0 }
    guard Advert(decoding: advert.encoded()) == advert else {
        fatalError("an accepted advert does not survive re-encoding")
    }
    return 0
}
