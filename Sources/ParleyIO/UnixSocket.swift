import Glibc

/// Unix-domain stream socket plumbing (the control API's transport): addresses, bind, connect, file identity.
package enum UnixSocket {
    /// The longest path `sun_path` holds (108 bytes on Linux, one of them for the terminating NUL).
    package static let maxPathBytes = MemoryLayout<sockaddr_un>.size - MemoryLayout<sa_family_t>.size - 1

    /// A new stream socket (close-on-exec; non-blocking when asked).
    package static func makeSocket(nonBlocking: Bool) -> Int32 {
        var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return socket(AF_UNIX, type, 0)
    }

    /// Runs `body` with the `sockaddr_un` for `path`; nil when the path does not fit (or holds a NUL).
    package static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathBytes, !bytes.contains(0) else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// Connects a blocking socket to `path`; returns the descriptor or the errno that stopped it.
    package static func connect(to path: String) -> Result<Int32, IOError> {
        let fd = makeSocket(nonBlocking: false)
        guard fd >= 0 else { return .failure(IOError("socket", code: errno)) }
        while true {
            guard let result = withAddress(path, { Glibc.connect(fd, $0, $1) }) else {
                Glibc.close(fd)
                return .failure(IOError("connect \(path)", code: ENAMETOOLONG))
            }
            if result == 0 { return .success(fd) }
            let code = errno
            if code == EINTR { continue }
            Glibc.close(fd)
            return .failure(IOError("connect \(path)", code: code))
        }
    }

    /// The device and inode of the file at `path` (not following a symbolic link), or the errno of `lstat`.
    package static func identity(of path: String) -> Result<FileIdentity, IOError> {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .failure(IOError("stat \(path)", code: errno)) }
        return .success(FileIdentity(info))
    }
}

/// What `lstat` says about a file, as far as we check it.
package struct FileIdentity: Equatable, Sendable {
    package let device: UInt64
    package let inode: UInt64
    package let isSocket: Bool

    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        isSocket = (info.st_mode & S_IFMT) == S_IFSOCK
    }
}

