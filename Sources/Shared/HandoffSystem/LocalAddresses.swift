#if canImport(Glibc)
import Glibc
#endif

/// This host's addresses, as other devices may reach them.
public enum LocalAddresses {
    /// IPv4 addresses of the interfaces that are up, loopback aside (the hint an invite prints).
    public static func ipv4() -> [String] {
        addresses().filter { !$0.contains(":") }
    }

    /// Addresses worth putting in a unicast zone: beyond this link, so neither loopback nor
    /// link-local (169.254/16, fe80::/10); IPv4 first.
    public static func routable() -> [String] {
        let all = addresses().filter { address in
            !address.hasPrefix("169.254.") && !address.lowercased().hasPrefix("fe80:") && address != "::1"
        }
        return all.filter { !$0.contains(":") } + all.filter { $0.contains(":") }
    }

    /// Every address of the interfaces that are up, loopback aside.
    private static func addresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0
            else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                out.append(host.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
            }
        }
        return out
    }
}
