import Glibc

/// SplitMix64 (Steele, Lea, Flood 2014): a seeded generator, so a test's random choices repeat run after run.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose stream is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Loopback ports for the servers a test starts.
public enum LoopbackPort {
    /// Whether `port` on 127.0.0.1 could be bound a moment ago for `type` (SOCK_DGRAM or SOCK_STREAM).
    public static func isFree(_ port: UInt16, type: Int32) -> Bool {
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Whether `port` is free for both UDP and TCP.
    public static func isFree(_ port: UInt16) -> Bool {
        isFree(port, type: Int32(SOCK_DGRAM.rawValue)) && isFree(port, type: Int32(SOCK_STREAM.rawValue))
    }
}
