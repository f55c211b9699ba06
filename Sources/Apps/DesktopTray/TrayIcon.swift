import HandoffDBus

/// The status icon's picture, drawn here rather than looked up in an icon theme: a panel shows
/// `IconPixmap` whatever theme the desktop has (docs/desktop.md, "The status icon"). Two screens,
/// one behind the other — one device handing over to another; blue while handoff is on, grey
/// while it is off or handoffd is not running.
package enum TrayIcon {
    /// Sizes panels ask for most (22 and 24 on most panels, 32 and 48 on large ones).
    package static let sizes = [22, 24, 32, 48]
    /// #3584e4 and #8a8a8a, opaque.
    package static let activeColor: (UInt8, UInt8, UInt8) = (0x35, 0x84, 0xe4)
    package static let inactiveColor: (UInt8, UInt8, UInt8) = (0x8a, 0x8a, 0x8a)

    /// `a(iiay)`: each size as width, height and ARGB32 in network byte order (alpha first).
    package static func pixmaps(active: Bool) -> DBusValue {
        .array(element: "(iiay)", sizes.map { size in
            let pixels = argb(size: size, color: active ? activeColor : inactiveColor)
            return .structure([.int32(Int32(size)), .int32(Int32(size)), .array(element: "y", pixels.map { .byte($0) })])
        })
    }

    /// The picture at `size`×`size`, each pixel's coverage from 4×4 samples.
    static func argb(size: Int, color: (UInt8, UInt8, UInt8)) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size * size * 4)
        let samples = 4
        for y in 0..<size {
            for x in 0..<size {
                var covered = 0
                for sy in 0..<samples {
                    for sx in 0..<samples {
                        let px = (Double(x) + (Double(sx) + 0.5) / Double(samples)) / Double(size)
                        let py = (Double(y) + (Double(sy) + 0.5) / Double(samples)) / Double(size)
                        if inside(px, py) { covered += 1 }
                    }
                }
                let alpha = UInt8((covered * 255) / (samples * samples))
                bytes += [alpha, color.0, color.1, color.2]
            }
        }
        return bytes
    }

    /// Whether the point (in the unit square, y down) is painted: the screen behind as an
    /// outline, the one in front filled, with a gap between them.
    package static func inside(_ x: Double, _ y: Double) -> Bool {
        let front = (x0: 0.06, y0: 0.38, x1: 0.64, y1: 0.88)
        if roundedRect(x, y, front, radius: 0.08) { return true }
        // The gap around the front screen keeps the outline behind it from touching it.
        let gap = 0.07
        if roundedRect(x, y, (front.x0 - gap, front.y0 - gap, front.x1 + gap, front.y1 + gap), radius: 0.12) { return false }
        let back = (x0: 0.36, y0: 0.10, x1: 0.94, y1: 0.60)
        let stroke = 0.09
        return roundedRect(x, y, back, radius: 0.08)
            && !roundedRect(x, y, (back.x0 + stroke, back.y0 + stroke, back.x1 - stroke, back.y1 - stroke), radius: 0.02)
    }

    private static func roundedRect(_ x: Double, _ y: Double, _ r: (x0: Double, y0: Double, x1: Double, y1: Double), radius: Double) -> Bool {
        let cx = (r.x0 + r.x1) / 2
        let cy = (r.y0 + r.y1) / 2
        let qx = max(abs(x - cx) - ((r.x1 - r.x0) / 2 - radius), 0)
        let qy = max(abs(y - cy) - ((r.y1 - r.y0) / 2 - radius), 0)
        return qx * qx + qy * qy <= radius * radius && abs(x - cx) <= (r.x1 - r.x0) / 2 && abs(y - cy) <= (r.y1 - r.y0) / 2
    }
}
