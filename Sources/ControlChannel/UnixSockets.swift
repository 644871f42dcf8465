import Foundation
import Glibc

/// Unix-domain stream socket plumbing shared by the server and the client: addresses, bind, connect, accept.
enum UnixSockets {
    /// The longest path `sun_path` holds (108 bytes on Linux, one of them for the terminating NUL).
    static let maxPathBytes = MemoryLayout<sockaddr_un>.size - MemoryLayout<sa_family_t>.size - 1

    /// A new stream socket (close-on-exec; non-blocking when asked).
    static func makeSocket(nonBlocking: Bool) -> Int32 {
        var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return socket(AF_UNIX, type, 0)
    }

    /// Runs `body` with the `sockaddr_un` for `path`; nil when the path does not fit (or holds a NUL).
    static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
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
    static func connect(to path: String) -> Result<Int32, Errno> {
        let fd = makeSocket(nonBlocking: false)
        guard fd >= 0 else { return .failure(Errno(errno)) }
        while true {
            guard let result = withAddress(path, { Glibc.connect(fd, $0, $1) }) else {
                Glibc.close(fd)
                return .failure(Errno(ENAMETOOLONG))
            }
            if result == 0 { return .success(fd) }
            let code = errno
            if code == EINTR { continue }
            Glibc.close(fd)
            return .failure(Errno(code))
        }
    }

    /// The outcome of one `accept`.
    enum Accepted {
        /// A new connection, already non-blocking and close-on-exec.
        case connection(Int32)
        /// Nothing more to accept now.
        case none
        /// `accept` failed with this errno.
        case failed(Errno)
    }

    /// Accepts one connection (non-blocking, close-on-exec).
    static func accept(_ listener: Int32) -> Accepted {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            if fd < 0 {
                let code = errno
                switch code {
                case EINTR, ECONNABORTED: continue
                case EAGAIN, EWOULDBLOCK: return .none
                default: return .failed(Errno(code))
                }
            }
            // accept4 is not visible to Swift (it needs _GNU_SOURCE): set the flags afterwards.
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            return .connection(fd)
        }
    }

    /// Sets the kernel's send buffer size.
    static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var size = Int32(clamping: bytes)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The device and inode of the file at `path` (not following a symbolic link), or the errno of `lstat`.
    static func identity(of path: String) -> Result<FileIdentity, Errno> {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .failure(Errno(errno)) }
        return .success(FileIdentity(info))
    }
}

/// What `lstat` says about a file, as far as we check it.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let isSocket: Bool

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        isSocket = (info.st_mode & S_IFMT) == S_IFSOCK
    }
}

/// An errno value with its text.
struct Errno: Error, Equatable, CustomStringConvertible {
    let code: Int32

    init(_ code: Int32) { self.code = code }

    var description: String { String(cString: strerror(code)) }
}

/// Bytes waiting for a socket, in order.
struct OutgoingBytes {
    private var chunks: [Data] = []
    private var head = 0
    /// Bytes of `chunks[head]` already written.
    private var offset = 0
    private(set) var byteCount = 0

    mutating func append(_ bytes: Data) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        byteCount += bytes.count
    }

    /// Writes what the socket takes without blocking; returns the errno that stopped it, if one other than
    /// EAGAIN did.
    mutating func write(to fd: Int32) -> Int32? {
        while head < chunks.count {
            let chunk = chunks[head]
            let result = chunk.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                compact()
                return code == EAGAIN || code == EWOULDBLOCK ? nil : code
            }
            byteCount -= result
            offset += result
            if offset == chunk.count {
                head += 1
                offset = 0
            }
        }
        compact()
        return nil
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        byteCount = 0
    }

    private mutating func compact() {
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 64)
            head = 0
        } else if head >= 32, head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
