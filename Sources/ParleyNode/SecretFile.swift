import Foundation
import Glibc
import ParleyIO

/// A file only its owner may read (mode 0600), holding a private key: written whole or not at all, never replaced.
enum SecretFile {
    /// Writes `text` to `path` unless a file is there: to a temporary file of its own first (fsynced), then linked
    /// into place, so the file never exists half written (a crash leaves only a stray temporary) and a process that
    /// got there first wins. Its directory is made (0700) when missing. False when `path` already existed.
    static func create(_ path: String, text: String) throws(NodeError) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw NodeError("\(directory): cannot be created (\(error.localizedDescription))")
        }
        let bytes = Array(text.utf8)
        let temporary = path + ".new-\(getpid())-\(SecureRandom.token(8))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw NodeError("\(temporary): cannot be created (\(String(cString: strerror(errno))))") }
        let written = write(fd, bytes, bytes.count) == bytes.count && fsync(fd) == 0
        let writeError = errno
        close(fd)
        defer { unlink(temporary) }
        guard written else { throw NodeError("\(temporary): cannot be written (\(String(cString: strerror(writeError))))") }
        if link(temporary, path) != 0 {
            if errno == EEXIST { return false }
            throw NodeError("\(path): cannot be created (\(String(cString: strerror(errno))))")
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
        return true
    }

    /// A key file others may read is made the owner's alone; one that cannot be is refused.
    static func tighten(_ path: String) throws(NodeError) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o077 != 0 else { return }
        guard status.st_uid == geteuid(), chmod(path, 0o600) == 0 else {
            throw NodeError("\(path) is readable by others and cannot be made 0600: refusing to use it")
        }
    }
}

/// This node's DTLS-SRTP certificate on disk: `DATA_DIR/identity/dtls-certificate.pem`, a self-signed ECDSA P-256
/// certificate and its key (PEM, mode 0600), made on first use and kept, so the fingerprint our SDP gives stays the
/// same from call to call and run to run (a peer may pin it). One that no longer reads, or expires within a month,
/// is replaced by a new one (the old file kept beside it as `.old`).
public struct DTLSCertificateStore: Sendable {
    /// The file.
    public let path: String

    /// The store inside a data directory.
    public init(dataDirectory: DataDirectory) {
        path = ((dataDirectory.path as NSString).appendingPathComponent("identity") as NSString)
            .appendingPathComponent("dtls-certificate.pem")
    }

    /// The certificate, made (and written, 0600) when there is none yet or the one there is unusable; `note` says
    /// what was done, for the log (nil: it was loaded).
    public func loadOrCreate() throws(NodeError) -> (certificate: DTLSCertificate, note: String?) {
        var replaced: String?
        if FileManager.default.fileExists(atPath: path) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw NodeError("\(path): cannot be read") }
            do {
                let certificate = try DTLSCertificate(pem: text)
                try SecretFile.tighten(path)
                return (certificate, nil)
            } catch let error as DTLSCertificateError {
                guard rename(path, path + ".old") == 0 else { throw NodeError("\(path): \(error), and it cannot be moved aside") }
                replaced = "\(error)"
            } catch {
                throw error as? NodeError ?? NodeError("\(path): \(error)")
            }
        }
        let certificate: DTLSCertificate
        do { certificate = try DTLSCertificate.generate(commonName: "parley") } catch { throw NodeError("\(path): \(error)") }
        guard try SecretFile.create(path, text: certificate.pem) else { return try loadOrCreate() }
        let why = replaced.map { " (the old one, kept as \(path).old: \($0))" } ?? ""
        return (certificate, "made this node's DTLS certificate in \(path)\(why): \(certificate.fingerprint)")
    }
}
