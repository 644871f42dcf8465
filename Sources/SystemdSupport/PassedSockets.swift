import CSystemd
import Glibc

/// The listening sockets a service manager passed this process at start (socket activation: a `.socket` unit, or
/// `systemd-socket-activate`), read with libsystemd's sd_listen_fds_with_names(3): `$LISTEN_FDS` descriptors from 3
/// on, for `$LISTEN_PID` (this process), named by `$LISTEN_FDNAMES` (a unit's `FileDescriptorName=`; "unknown" when
/// unnamed).
public enum PassedSockets {
    /// One passed socket.
    public struct Socket: Sendable, Hashable {
        /// Its name (`FileDescriptorName=`).
        public let name: String
        /// Its descriptor (close-on-exec).
        public let descriptor: Int32
        /// The path it is bound to when it is a listening Unix stream socket with one (nil: another kind of socket).
        public let unixPath: String?
    }

    /// Takes the sockets passed to this process, once: the variables are unset, so that neither a second call nor a
    /// child process sees them. Empty when none were passed (or they were meant for another process).
    public static func take() -> [Socket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                var index = 0
                while let name = names[index] {
                    free(name)
                    index += 1
                }
                free(names)
            }
        }
        guard count > 0 else { return [] }
        return (0..<Int(count)).map { index in
            let descriptor = SD_LISTEN_FDS_START + Int32(index)
            let name = names?[index].map { String(cString: $0) } ?? "unknown"
            return Socket(name: name, descriptor: descriptor, unixPath: listeningUnixPath(descriptor))
        }
    }

    /// The path of `descriptor` when it is a listening Unix stream socket bound to one (sd_is_socket_unix(3)).
    private static func listeningUnixPath(_ descriptor: Int32) -> String? {
        guard sd_is_socket_unix(descriptor, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else { return nil }
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return nil }
        let pathBytes = Int(length) - MemoryLayout<sa_family_t>.size
        guard pathBytes > 0 else { return nil }
        return withUnsafeBytes(of: address.sun_path) { raw in
            let bytes = raw.prefix(pathBytes).prefix { $0 != 0 }
            // An abstract socket's name begins with a NUL: it has no path a client could find.
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
    }
}
