import Foundation
import Glibc
import ParleyIO

/// Why a control token could not be created or read.
public enum ControlTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// There is no token file at the path (the daemon has not run with this data directory).
    case missing(path: String)
    /// The path holds something other than a regular file (a directory, a symbolic link, a socket…).
    case notARegularFile(path: String)
    /// The file belongs to another user.
    case wrongOwner(path: String, owner: UInt32)
    /// The file's permissions are not 0600 (others may have read it).
    case insecureMode(path: String, mode: UInt32)
    /// The file does not hold 64 hexadecimal characters.
    case invalidContent(path: String)
    /// A system call failed.
    case system(operation: String, path: String, code: Int32)

    /// For people.
    public var description: String {
        switch self {
        case .missing(let path):
            "no control token at \(path) (has parleyd run with this data directory?)"
        case .notARegularFile(let path):
            "\(path) is not a regular file; refusing to use or replace it as the control token"
        case .wrongOwner(let path, let owner):
            "\(path) belongs to uid \(owner), not to us (uid \(geteuid())); refusing to use it as the control token"
        case .insecureMode(let path, let mode):
            "\(path) has mode \(String(mode, radix: 8)), not 600; remove it (a new token will be made) or chmod 600 it"
        case .invalidContent(let path):
            "\(path) does not hold a control token (64 hexadecimal characters); remove it to have a new one made"
        case .system(let operation, let path, let code):
            "\(operation) \(path): \(String(cString: strerror(code)))"
        }
    }
}

/// The shared secret a frontend presents in its hello: 32 random bytes as 64 lowercase hexadecimal characters, in
/// `control.token` inside the daemon's data directory, readable by its owner only.
public enum ControlToken {
    /// The token file's name inside the data directory.
    public static let fileName = "control.token"
    /// Characters in a token.
    public static let length = 64

    /// The token in `directory`: the existing one when the file is a regular file owned by us with mode 0600 and
    /// valid content, else a new one written to a file created with mode 0600 (never readable by others, not even
    /// briefly). Anything else at the path is an error; it is never overwritten.
    public static func loadOrCreate(in directory: String) throws(ControlTokenError) -> String {
        let path = self.path(in: directory)
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if created >= 0 { return try writeNew(fd: created, path: path) }
        let code = errno
        guard code == EEXIST else {
            throw code == ENOENT ? .system(operation: "create (does the directory exist?)", path: path, code: code)
                : .system(operation: "create", path: path, code: code)
        }
        return try readExisting(path: path, requireOwnerOnly: true)
    }

    /// The token in `directory`, for clients: the file must be a regular file with valid content (its owner and
    /// mode are the daemon's business).
    public static func read(from directory: String) throws(ControlTokenError) -> String {
        try readExisting(path: path(in: directory), requireOwnerOnly: false)
    }

    /// `directory/control.token`.
    public static func path(in directory: String) -> String {
        directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName
    }

    private static func writeNew(fd: Int32, path: String) throws(ControlTokenError) -> String {
        let hexDigits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in SecureRandom.bytes(length / 2) {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0F)])
        }
        var failure: ControlTokenError?
        // The umask may have removed bits from 0600; the owner must still be able to read it back.
        if fchmod(fd, 0o600) != 0 {
            failure = .system(operation: "chmod", path: path, code: errno)
        } else {
            var written = 0
            while written < text.count {
                let result = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
                if result < 0 {
                    if errno == EINTR { continue }
                    failure = .system(operation: "write", path: path, code: errno)
                    break
                }
                written += result
            }
            if failure == nil, fsync(fd) != 0 { failure = .system(operation: "fsync", path: path, code: errno) }
        }
        Glibc.close(fd)
        if let failure {
            unlink(path)  // ours: created a moment ago with O_EXCL
            throw failure
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func readExisting(path: String, requireOwnerOnly: Bool) throws(ControlTokenError) -> String {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT: throw .missing(path: path)
            case ELOOP: throw .notARegularFile(path: path)  // O_NOFOLLOW met a symbolic link
            default: throw .system(operation: "open", path: path, code: code)
            }
        }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .system(operation: "stat", path: path, code: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notARegularFile(path: path) }
        if requireOwnerOnly {
            guard info.st_uid == geteuid() else { throw .wrongOwner(path: path, owner: info.st_uid) }
            let mode = UInt32(info.st_mode & 0o7777)
            guard mode == 0o600 else { throw .insecureMode(path: path, mode: mode) }
        }
        var buffer = [UInt8](repeating: 0, count: length + 2)
        var count = 0
        while count < buffer.count {
            let result = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if result < 0 {
                if errno == EINTR { continue }
                throw .system(operation: "read", path: path, code: errno)
            }
            if result == 0 { break }
            count += result
        }
        var content = buffer[0..<count]
        if content.last == 0x0A { content = content.dropLast() }  // a newline left by an editor
        let isHex = content.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) }
        guard content.count == length, isHex else { throw .invalidContent(path: path) }
        return String(decoding: content, as: UTF8.self).lowercased()
    }
}
