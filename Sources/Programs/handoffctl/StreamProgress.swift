#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How far a continuation stream is, on one line of stderr that updates itself while the stream
/// runs: bytes so far, rate, and — when the sending side knows the length (it sends a file) — the
/// total and the time left. Only on a terminal: nothing when stderr is a pipe or a file, or with
/// `--json`. It asks handoffd (which counts the bytes) four times a second.
final class StreamProgress: Sendable {
    private final class Flag: Sendable {
        let value = Atomic<Bool>(true)
    }

    private let running = Flag()
    private let thread: BlockingThread

    /// Starts showing `streamID`'s progress if stderr is a terminal and `enabled`.
    static func show(_ streamID: UUID, client: HandoffClient, receiving: Bool, enabled: Bool = true) -> StreamProgress? {
        guard enabled, isatty(2) == 1 else { return nil }
        return StreamProgress(streamID, client: client, receiving: receiving)
    }

    private init(_ streamID: UUID, client: HandoffClient, receiving: Bool) {
        let running = self.running
        thread = BlockingThread {
            let started = ContinuousClock.now
            var shown = false
            while running.value.load(ordering: .relaxed) {
                usleep(250_000)
                guard running.value.load(ordering: .relaxed), let info = try? client.send(.stream(streamID)) else { continue }
                let bytes = receiving ? info.bytesReceived : info.bytesSent
                guard bytes > 0 else { continue }
                Terminal.diagnostic("\r" + StreamProgress.line(bytes: bytes, of: info.expectedBytes, elapsed: ContinuousClock.now - started) + "\u{1B}[K")
                shown = true
            }
            if shown { Terminal.diagnostic("\r\u{1B}[K") }
        }
    }

    /// Stops and clears the line (the caller prints the outcome).
    func stop() {
        running.value.store(false, ordering: .relaxed)
        thread.join()
    }

    /// "412 MB of 1.07 GB, 203 MB/s, 0:04 left" (or without the total and the time left).
    static func line(bytes: Int64, of total: Int64?, elapsed: Duration) -> String {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(bytes) / seconds : 0
        var text = size(bytes)
        if let total, total > 0 { text += " of \(size(total))" }
        // The total comes from the other device: any value, so everything is clamped, never trapped.
        text += ", \(size(Int64(min(rate, 1e18))))/s"
        if let total, total > bytes, rate > 0 {
            let longest: Double = 359_999  // 99:59:59
            let left = Int(min(Double(total - bytes) / rate, longest).rounded(.up))
            text += ", \(left / 60):\(left % 60 < 10 ? "0" : "")\(left % 60) left"
        }
        return text
    }

    /// Decimal units, three significant digits: 999 B, 1.23 kB, 45.6 MB, 1.07 GB.
    static func size(_ bytes: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let digits = value < 10 ? 2 : value < 100 ? 1 : 0
        let scale = digits == 2 ? 100 : digits == 1 ? 10 : 1
        let scaled = Int((value * Double(scale)).rounded())
        let decimals = String(scaled % scale)
        let fraction = digits == 0 ? "" : "." + String(repeating: "0", count: digits - decimals.count) + decimals
        return "\(scaled / scale)\(fraction) \(units[unit])"
    }
}
