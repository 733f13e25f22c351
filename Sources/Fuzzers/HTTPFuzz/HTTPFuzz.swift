import HTTPServer

/// libFuzzer entry point: every input goes through the request parser whole, then split in two
/// at a point the input chooses (requests arrive in pieces), with small limits so the limit
/// paths are reached. Any crash, hang or runaway allocation is a bug; so is a different
/// outcome for the same bytes arriving in two pieces.
@_cdecl("LLVMFuzzerTestOneInput")
public func httpFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limits = HTTPRequestParser.Limits(requestLineBytes: 256, headerBytes: 1024, headerCount: 16, bodyBytes: 2048)
    func outcomes(_ pieces: [ArraySlice<UInt8>]) -> [HTTPRequestParser.Outcome] {
        var parser = HTTPRequestParser(limits: limits)
        var seen: [HTTPRequestParser.Outcome] = []
        for piece in pieces {
            parser.append(piece)
            while true {
                let outcome = parser.next()
                if outcome == .needMore { break }
                seen.append(outcome)
                if case .failure = outcome { return seen }
            }
        }
        return seen
    }
    let whole = outcomes([bytes[...]])
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let split = outcomes([bytes[..<cut], bytes[cut...]])
    // A limit may be met earlier in pieces (a request line over its limit before its end), so
    // only requests read whole must agree.
    let requests = { (all: [HTTPRequestParser.Outcome]) in all.filter { if case .request = $0 { return true } else { return false } } }
    if !whole.contains(where: { if case .failure = $0 { return true } else { return false } }) && !split.contains(where: { if case .failure = $0 { return true } else { return false } }) {
        precondition(requests(whole) == requests(split), "the same bytes in two pieces read differently")
    }
    return 0
}
